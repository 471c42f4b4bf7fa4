package hdfs

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	hadoop "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_common"
	"google.golang.org/protobuf/proto"
)

// DelegationTokenKind is the kind of the namenode's delegation tokens.
const DelegationTokenKind = "HDFS_DELEGATION_TOKEN"

// maxCredentialsFile bounds what ReadCredentialsFile reads: a file of a few
// tokens is a few kilobytes.
const maxCredentialsFile = 16 << 20

// Token is a Hadoop token: an identifier, the password the service derived
// from it, the token's kind and the service it is for (ip:port or
// ha-hdfs:NAMESERVICE for a namenode).
type Token struct {
	Identifier []byte
	Password   []byte
	Kind       string
	Service    string
}

// DelegationToken asks the namenode for a delegation token that renewer
// may renew (the namenode keeps the short name of a principal). The
// namenode gives them only to a Kerberos login. The token's Service is
// left empty: it is what the caller reaches the namenode by.
func (c *Client) DelegationToken(renewer string) (*Token, error) {
	req := &hadoop.GetDelegationTokenRequestProto{Renewer: proto.String(renewer)}
	resp := &hadoop.GetDelegationTokenResponseProto{}
	if err := c.namenode.Execute("getDelegationToken", req, resp); err != nil {
		return nil, err
	}
	t := resp.GetToken()
	if t == nil {
		// The namenode answers so when security is off.
		return nil, errors.New("the namenode issued no delegation token (is Kerberos enabled on it?)")
	}
	return &Token{Identifier: t.GetIdentifier(), Password: t.GetPassword(), Kind: t.GetKind(), Service: t.GetService()}, nil
}

// Owner is the user a delegation token's identifier names: what the
// namenode takes as the user of a connection that logs in with it.
func (t *Token) Owner() (string, error) {
	r := &writableReader{b: t.Identifier}
	if _, err := r.byte(); err != nil { // the identifier's version
		return "", err
	}
	return r.text()
}

func (t *Token) proto() *hadoop.TokenProto {
	return &hadoop.TokenProto{Identifier: t.Identifier, Password: t.Password, Kind: proto.String(t.Kind), Service: proto.String(t.Service)}
}

// ReadCredentialsFile reads the tokens of a Hadoop credentials file, as
// HADOOP_TOKEN_FILE_LOCATION names one: "HDTS", a version byte, then the
// tokens and secret keys as Writables (version 0) or as one length-delimited
// CredentialsProto (version 1). The secret keys are skipped.
func ReadCredentialsFile(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialsFile+1))
	if err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	if len(b) > maxCredentialsFile {
		return nil, fmt.Errorf("credentials file %s: larger than %d bytes", path, maxCredentialsFile)
	}
	tokens, off, err := parseCredentials(b)
	if err != nil {
		return nil, fmt.Errorf("credentials file %s at offset %d: %w", path, off, err)
	}
	return tokens, nil
}

// parseCredentials returns the tokens, or the offset where b went wrong.
func parseCredentials(b []byte) ([]Token, int, error) {
	if !bytes.HasPrefix(b, []byte("HDTS")) || len(b) < 5 {
		return nil, 0, errors.New(`not a Hadoop credentials file (no "HDTS" header)`)
	}
	switch b[4] {
	case 0:
		r := &writableReader{b: b, off: 5}
		tokens, err := r.credentials()
		return tokens, r.off, err
	case 1:
		return credentialsProto(b, 5)
	default:
		return nil, 4, fmt.Errorf("unknown credentials file version %d (0 and 1 are known)", b[4])
	}
}

func credentialsProto(b []byte, off int) ([]Token, int, error) {
	size, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return nil, off, errors.New("bad length of the CredentialsProto")
	}
	off += n
	if size > uint64(len(b)-off) {
		return nil, off, fmt.Errorf("CredentialsProto of %d bytes in %d left", size, len(b)-off)
	}
	var creds hadoop.CredentialsProto
	if err := proto.Unmarshal(b[off:off+int(size)], &creds); err != nil {
		return nil, off, fmt.Errorf("CredentialsProto: %w", err)
	}
	var tokens []Token
	for _, kv := range creds.GetTokens() {
		t := kv.GetToken()
		if t == nil {
			continue
		}
		tokens = append(tokens, Token{Identifier: t.GetIdentifier(), Password: t.GetPassword(), Kind: t.GetKind(), Service: t.GetService()})
	}
	return tokens, off + int(size), nil
}

// writableReader reads what Hadoop's Writables write: vints (WritableUtils)
// and Texts (a vint length, then the bytes).
type writableReader struct {
	b   []byte
	off int
}

func (r *writableReader) credentials() ([]Token, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	var tokens []Token
	for i := 0; i < n; i++ {
		if _, err := r.text(); err != nil { // the alias
			return nil, err
		}
		var t Token
		if t.Identifier, err = r.bytes(); err != nil {
			return nil, err
		}
		if t.Password, err = r.bytes(); err != nil {
			return nil, err
		}
		if t.Kind, err = r.text(); err != nil {
			return nil, err
		}
		if t.Service, err = r.text(); err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

func (r *writableReader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, io.ErrUnexpectedEOF
	}
	r.off++
	return r.b[r.off-1], nil
}

// vint is WritableUtils.readVLong: a byte from -112 to 127 is the value;
// below, it gives the sign and the count of big-endian bytes that follow.
func (r *writableReader) vint() (int64, error) {
	first, err := r.byte()
	if err != nil {
		return 0, err
	}
	lead := int8(first)
	if lead >= -112 {
		return int64(lead), nil
	}
	negative := lead < -120
	size := int(-112 - lead)
	if negative {
		size = int(-120 - lead)
	}
	if size > len(r.b)-r.off {
		return 0, io.ErrUnexpectedEOF
	}
	var v int64
	for _, c := range r.b[r.off : r.off+size] {
		v = v<<8 | int64(c)
	}
	r.off += size
	if negative {
		v = ^v
	}
	return v, nil
}

// count is a vint that counts or measures what follows, so at most what is left.
func (r *writableReader) count() (int, error) {
	at := r.off
	v, err := r.vint()
	if err != nil {
		return 0, err
	}
	if v < 0 || v > int64(len(r.b)-r.off) {
		r.off = at
		return 0, fmt.Errorf("length %d with %d bytes left", v, len(r.b)-r.off)
	}
	return int(v), nil
}

func (r *writableReader) bytes() ([]byte, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	r.off += n
	return r.b[r.off-n : r.off], nil
}

func (r *writableReader) text() (string, error) {
	b, err := r.bytes()
	return string(b), err
}

// WriteCredentials writes tokens as a Hadoop credentials file of version
// 0 (Writables, which every Hadoop release reads), each under its service
// as its alias, as Hadoop's TokenCache files them.
func WriteCredentials(w io.Writer, tokens []Token) error {
	b := append([]byte("HDTS"), 0)
	b = appendVInt(b, int64(len(tokens)))
	for _, t := range tokens {
		b = appendText(b, []byte(t.Service))
		b = t.appendWritable(b)
	}
	b = appendVInt(b, 0) // no secret keys
	_, err := w.Write(b)
	return err
}

// appendWritable is the token as Hadoop's Token.write writes it.
func (t *Token) appendWritable(b []byte) []byte {
	b = appendText(b, t.Identifier)
	b = appendText(b, t.Password)
	b = appendText(b, []byte(t.Kind))
	return appendText(b, []byte(t.Service))
}

// URLString is the token as Hadoop's Token.encodeToUrlString writes it,
// the form YARN's REST API takes tokens in: its Writable form in URL-safe
// base64 without padding.
func (t *Token) URLString() string {
	return base64.RawURLEncoding.EncodeToString(t.appendWritable(nil))
}

// appendText is a vint length and the bytes, as Text and byte arrays are written.
func appendText(b, s []byte) []byte {
	return append(appendVInt(b, int64(len(s))), s...)
}

// appendVInt is WritableUtils.writeVLong: -112 to 127 in one byte, else a
// byte that gives the sign and the count of big-endian bytes that follow.
func appendVInt(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(v))
	}
	lead := int64(-112)
	if v < 0 {
		v = ^v
		lead = -120
	}
	size := 0
	for t := v; t != 0; t >>= 8 {
		size++
	}
	b = append(b, byte(lead-int64(size)))
	for i := size - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// TokenForService picks the token of kind for service among tokens.
func TokenForService(tokens []Token, kind, service string) (*Token, bool) {
	for i := range tokens {
		if tokens[i].Kind == kind && strings.EqualFold(tokens[i].Service, service) {
			return &tokens[i], true
		}
	}
	return nil, false
}
