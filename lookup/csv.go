package lookup

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// CSVColumns are the columns of AppendCSV's rows: key, namespace and value
// as JSON, the TTL split in three: a state whose TTL duration the snapshot
// does not record has only its last access.
var CSVColumns = []string{"operator", "state", "kind", "key", "namespace", "key_group", "subtask", "value", "ttl_expires_at", "ttl_expired", "ttl_last_access"}

// AppendCSV appends rec as one CSV row, quoted as encoding/csv quotes.
func AppendCSV(b []byte, rec *Record) []byte { return AppendCSVRow(b, rec.Fields()) }

// Fields are rec's values in the order of CSVColumns.
func (rec *Record) Fields() []string {
	var scratch [64]byte
	json := func(v any) string { return string(appendValue(scratch[:0], v)) }
	ns, expires, expired, access := "", "", "", ""
	if rec.Namespace != nil {
		ns = json(rec.Namespace)
	}
	if rec.TTL != nil && !rec.TTL.LastAccess.IsZero() {
		access = rec.TTL.LastAccess.Format(time.RFC3339Nano)
	} else if rec.TTL != nil {
		expires, expired = rec.TTL.ExpiresAt.Format(time.RFC3339Nano), strconv.FormatBool(rec.TTL.Expired)
	}
	return []string{rec.Operator, rec.State, string(rec.Kind), json(rec.Key), ns,
		strconv.Itoa(rec.KeyGroup), strconv.Itoa(rec.Subtask), json(rec.Value), expires, expired, access}
}

// AppendCSVRow appends one row of fields as encoding/csv's Writer does
// with its defaults (comma, LF line ends).
func AppendCSVRow(b []byte, fields []string) []byte {
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		if !csvNeedsQuotes(f) {
			b = append(b, f...)
			continue
		}
		b = append(b, '"')
		for {
			j := strings.IndexByte(f, '"')
			if j < 0 {
				break
			}
			b = append(b, f[:j+1]...)
			b = append(b, '"')
			f = f[j+1:]
		}
		b = append(b, f...)
		b = append(b, '"')
	}
	return append(b, '\n')
}

// csvNeedsQuotes is encoding/csv's rule for a comma-separated field.
func csvNeedsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` || strings.ContainsAny(f, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}
