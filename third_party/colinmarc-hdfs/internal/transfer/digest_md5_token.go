package transfer

import (
	"encoding/base64"
	"fmt"

	"github.com/colinmarc/hdfs/v2/internal/sasl"
)

// DigestMD5Token is the client side of a DIGEST-MD5 login (RFC 2831) with a
// Hadoop token, as the namenode's TOKEN method takes it, and afterwards the
// wrapping of messages under the negotiated QOP.
type DigestMD5Token struct {
	handshake digestMD5Handshake
	codec     digestMD5Conn // nil under QOP auth
}

// NewDigestMD5Token logs in with a token's identifier and password (both
// sent base64-encoded, as Hadoop's SASL client does) to the server that
// names itself protocol/serverID in its challenge's auth.
func NewDigestMD5Token(identifier, password []byte, protocol, serverID string) *DigestMD5Token {
	return &DigestMD5Token{handshake: digestMD5Handshake{
		authID:   []byte(base64.StdEncoding.EncodeToString(identifier)),
		passwd:   base64.StdEncoding.EncodeToString(password),
		hostname: serverID,
		service:  protocol,
	}}
}

// Respond answers the server's challenge.
func (t *DigestMD5Token) Respond(challenge []byte) ([]byte, error) {
	return t.handshake.challengeStep1(challenge)
}

// Verify checks the server's rspauth, which proves that it knows the
// token's password, and sets up the wrapping the QOP asks for.
func (t *DigestMD5Token) Verify(rspauth []byte) error {
	if err := t.handshake.challengeStep2(rspauth); err != nil {
		return err
	}
	kic, kis := generateIntegrityKeys(t.handshake.a1())
	switch qop := t.handshake.token.Qop[0]; qop {
	case sasl.QopAuthentication:
	case sasl.QopIntegrity:
		t.codec = newDigestMD5IntegrityConn(nil, kic, kis)
	case sasl.QopPrivacy:
		if t.handshake.cipher == "" {
			return fmt.Errorf("no available cipher among choices: %v", t.handshake.token.Cipher)
		}
		kcc, kcs := generatePrivacyKeys(t.handshake.a1(), t.handshake.cipher)
		t.codec = newDigestMD5PrivacyConn(nil, kic, kis, kcc, kcs)
	default:
		return fmt.Errorf("unexpected QOP %q in challenge", qop)
	}
	return nil
}

// Protected reports whether messages are wrapped (QOP integrity or privacy).
func (t *DigestMD5Token) Protected() bool { return t.codec != nil }

// Wrap signs or seals one message.
func (t *DigestMD5Token) Wrap(b []byte) []byte { return t.codec.wrap(b) }

// Unwrap checks (and decrypts) one message from the server.
func (t *DigestMD5Token) Unwrap(b []byte) ([]byte, error) { return t.codec.decode(b) }
