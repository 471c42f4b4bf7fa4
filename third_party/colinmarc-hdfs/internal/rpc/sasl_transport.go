package rpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	hadoop "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_common"
	"github.com/colinmarc/hdfs/v2/internal/transfer"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
	"google.golang.org/protobuf/proto"
)

// saslTransport implements encrypted or signed RPC.
type saslTransport struct {
	basicTransport
	wrapper saslWrapper
}

// saslWrapper signs or seals what goes to the namenode, and checks (and
// opens) what comes back, as the negotiated SASL mechanism and QOP say.
type saslWrapper interface {
	wrap(packet []byte) ([]byte, error)
	unwrap(token []byte) ([]byte, error)
}

// writeRequest sends a request wrapped as the negotiated protection says,
// inside a SASL WRAP message, as Hadoop's SaslRpcClient wraps what it sends.
func (t *saslTransport) writeRequest(w io.Writer, method string, requestID int32, req proto.Message) error {
	rrh := newRPCRequestHeader(requestID, t.clientID)
	packet, err := makeRPCPacket(rrh, newRequestHeader(method), req)
	if err != nil {
		return err
	}
	token, err := t.wrapper.wrap(packet)
	if err != nil {
		return fmt.Errorf("wrapping a request: %w", err)
	}
	wrapped, err := makeRPCPacket(newRPCRequestHeader(saslRpcCallId, t.clientID), &hadoop.RpcSaslProto{
		State: hadoop.RpcSaslProto_WRAP.Enum(),
		Token: token,
	})
	if err != nil {
		return err
	}
	_, err = w.Write(wrapped)
	return err
}

// kerberosWrapper wraps in RFC 4121 wrap tokens, signed (integrity) or
// sealed (privacy).
type kerberosWrapper struct {
	// sessionKey is the encryption key used to decrypt and encrypt the payload.
	sessionKey krbtypes.EncryptionKey
	// privacy indicates full message encryption
	privacy bool
	// seq is the sequence number of the next wrapped request.
	seq uint64
}

func (k *kerberosWrapper) wrap(packet []byte) ([]byte, error) {
	k.seq++
	if k.privacy {
		return sealedWrapToken(packet, k.sessionKey, k.seq)
	}
	return signedWrapToken(packet, k.sessionKey, k.seq)
}

func (k *kerberosWrapper) unwrap(token []byte) ([]byte, error) {
	var wrapToken gssapi.WrapToken
	if err := wrapToken.Unmarshal(token, true); err != nil {
		return nil, err
	}
	if k.privacy {
		return crypto.DecryptMessage(wrapToken.Payload, k.sessionKey, keyusage.GSSAPI_ACCEPTOR_SEAL)
	}
	if _, err := wrapToken.Verify(k.sessionKey, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, fmt.Errorf("unverifiable message from namenode: %s", err)
	}
	return wrapToken.Payload, nil
}

// digestWrapper wraps as DIGEST-MD5 does (RFC 2831's integrity and
// confidentiality), for a login with a delegation token.
type digestWrapper struct{ token *transfer.DigestMD5Token }

func (d digestWrapper) wrap(packet []byte) ([]byte, error) { return d.token.Wrap(packet), nil }

func (d digestWrapper) unwrap(token []byte) ([]byte, error) {
	payload, err := d.token.Unwrap(token)
	if err != nil {
		return nil, fmt.Errorf("unverifiable message from namenode: %w", err)
	}
	return payload, nil
}

func signedWrapToken(payload []byte, key krbtypes.EncryptionKey, seq uint64) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	wt := gssapi.WrapToken{EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: seq, Payload: payload}
	if err := wt.SetCheckSum(key, keyusage.GSSAPI_INITIATOR_SEAL); err != nil {
		return nil, err
	}
	return wt.Marshal()
}

// sealedWrapToken is RFC 4121's wrap token with confidentiality: the
// header, then the payload and a copy of the header encrypted together.
func sealedWrapToken(payload []byte, key krbtypes.EncryptionKey, seq uint64) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	header := make([]byte, gssapi.HdrLen)
	header[0], header[1] = 0x05, 0x04
	header[2] = 0x02 // sealed, sent by the initiator, no acceptor subkey
	header[3] = gssapi.FillerByte
	binary.BigEndian.PutUint64(header[8:16], seq) // EC and RRC stay 0
	plain := make([]byte, 0, len(payload)+len(header))
	plain = append(append(plain, payload...), header...)
	_, sealed, err := et.EncryptMessage(key.KeyValue, plain, keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		return nil, err
	}
	return append(header, sealed...), nil
}

// readResponse reads a SASL-wrapped RPC response.
func (t *saslTransport) readResponse(r io.Reader, method string, requestID int32, resp proto.Message) error {
	// First, read the sasl payload as a standard rpc response.
	sasl := hadoop.RpcSaslProto{}
	err := t.basicTransport.readResponse(r, method, saslRpcCallId, &sasl)
	if err != nil {
		return err
	} else if sasl.GetState() != hadoop.RpcSaslProto_WRAP {
		return fmt.Errorf("unexpected SASL state: %s", sasl.GetState().String())
	}

	payload, err := t.wrapper.unwrap(sasl.GetToken())
	if err != nil {
		return err
	}
	rrh := &hadoop.RpcResponseHeaderProto{}
	if err := readRPCPacket(bytes.NewReader(payload), rrh, resp); err != nil {
		return err
	}

	if int32(rrh.GetCallId()) != requestID {
		return errUnexpectedSequenceNumber
	} else if rrh.GetStatus() != hadoop.RpcResponseHeaderProto_SUCCESS {
		return &NamenodeError{
			method:    method,
			message:   rrh.GetErrorMsg(),
			code:      int(rrh.GetErrorDetail()),
			exception: rrh.GetExceptionClassName(),
		}
	}

	return nil
}
