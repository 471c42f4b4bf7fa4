package surgery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stateutil/stateutil/snapshot"
)

// checkStrictJSON refuses what encoding/json would take silently and
// change: bytes that are not UTF-8 and \u escapes of lone surrogates
// (both become U+FFFD), and a field given twice in one object (the last
// one wins). text need not be JSON: what is no JSON is left alone.
func checkStrictJSON(text []byte) error {
	if !utf8.Valid(text) {
		at := 0
		for at < len(text) {
			r, n := utf8.DecodeRune(text[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return badEditf("byte %d is not UTF-8 (write bytes as 0x-prefixed hex)", at+1)
	}
	if err := checkSurrogates(text); err != nil {
		return err
	}
	return checkRepeatedFields(text)
}

// checkSurrogates refuses a \u escape of a surrogate that is not half of
// a pair inside a JSON string.
func checkSurrogates(text []byte) error {
	inString := false
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '"':
			inString = !inString
		case text[i] == '\\' && inString:
			// \uXXXX at i, and a pair's second half at i+6.
			if r, ok := hex4(text, i+2); ok && text[i+1] == 'u' && utf16.IsSurrogate(r) {
				low, ok := hex4(text, i+8)
				if r >= 0xdc00 || !ok || text[i+6] != '\\' || text[i+7] != 'u' || low < 0xdc00 || low > 0xdfff {
					return badEditf("byte %d: %s is half of a UTF-16 surrogate pair, alone: no text holds it", i+1, text[i:i+6])
				}
				i += 11
				continue
			}
			i++ // the escaped character
		}
	}
	return nil
}

// hex4 is the rune of the four hex digits at text[at:].
func hex4(text []byte, at int) (rune, bool) {
	if at+4 > len(text) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(text[at:at+4]), 16, 16)
	return rune(v), err == nil
}

// checkRepeatedFields refuses a field that an object of text (at any
// depth) gives twice.
func checkRepeatedFields(text []byte) error {
	type frame struct {
		object  bool
		wantKey bool
		seen    map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(text))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or no JSON: others say what is wrong
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if key, ok := tok.(string); ok {
				if top.seen[key] {
					return badEditf("field %q given twice in one object", key)
				}
				top.seen[key] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, seen: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value has ended: the next token of an object is a key.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}

// checkKinds refuses a JSON number or boolean given for what the codec
// of t decodes as text: a number for a String key, say, which the codec
// would otherwise write as the number's digits. (Text for a number, "1"
// for a Long, is as JSON writes 64-bit integers, and stays fine.) given
// is the JSON as written, b its encoding as t.
func checkKinds(codecs *snapshot.Codecs, t snapshot.Type, given any, b []byte, what string) error {
	codec, err := codecs.Codec(t)
	if err != nil {
		return nil
	}
	decoded, err := codec.Decode(b)
	if err != nil {
		return nil
	}
	if at, ok := kindsAgree(given, decoded, ""); !ok {
		if at != "" {
			at = " at " + at
		}
		return badEditf("%s: a JSON number or boolean given%s where the state holds text; quote it", what, at)
	}
	return nil
}

// kindsAgree walks given and decoded together and says where a number or
// boolean stands for text.
func kindsAgree(given, decoded any, at string) (string, bool) {
	switch g := given.(type) {
	case json.Number, bool:
		if _, text := decoded.(string); text {
			return at, false
		}
	case []any:
		if d, ok := decoded.([]any); ok && len(d) == len(g) {
			for i := range g {
				if p, ok := kindsAgree(g[i], d[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
					return p, false
				}
			}
		}
	case map[string]any:
		if d, ok := decoded.(map[string]any); ok {
			for k, v := range g {
				if p, ok := kindsAgree(v, d[k], fmt.Sprintf("%s.%s", at, k)); !ok {
					return p, false
				}
			}
		}
	}
	return "", true
}
