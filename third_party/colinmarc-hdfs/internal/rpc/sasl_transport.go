package rpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	hadoop "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_common"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
	"google.golang.org/protobuf/proto"
)

// saslTransport implements encrypted or signed RPC.
type saslTransport struct {
	basicTransport

	// sessionKey is the encryption key used to decrypt and encrypt the payload.
	sessionKey krbtypes.EncryptionKey
	// privacy indicates full message encryption
	privacy bool
	// seq is the sequence number of the next wrapped request.
	seq uint64
}

// writeRequest sends a request wrapped as the negotiated protection says:
// signed (integrity) or encrypted (privacy) in an RFC 4121 wrap token,
// inside a SASL WRAP message, as Hadoop's SaslRpcClient wraps what it sends.
func (t *saslTransport) writeRequest(w io.Writer, method string, requestID int32, req proto.Message) error {
	rrh := newRPCRequestHeader(requestID, t.clientID)
	packet, err := makeRPCPacket(rrh, newRequestHeader(method), req)
	if err != nil {
		return err
	}
	t.seq++
	var token []byte
	if t.privacy {
		token, err = sealedWrapToken(packet, t.sessionKey, t.seq)
	} else {
		token, err = signedWrapToken(packet, t.sessionKey, t.seq)
	}
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

	// The SaslProto contains the actual payload.
	var wrapToken gssapi.WrapToken
	err = wrapToken.Unmarshal(sasl.GetToken(), true)
	if err != nil {
		return err
	}

	rrh := &hadoop.RpcResponseHeaderProto{}

	if t.privacy {
		// Decrypt the blob, which then looks like a normal RPC response.
		decrypted, err := crypto.DecryptMessage(wrapToken.Payload, t.sessionKey, keyusage.GSSAPI_ACCEPTOR_SEAL)
		if err != nil {
			return err
		}

		err = readRPCPacket(bytes.NewReader(decrypted), rrh, resp)
		if err != nil {
			return err
		}
	} else {
		// Verify the checksum; the blob is just a normal RPC response.
		_, err = wrapToken.Verify(t.sessionKey, keyusage.GSSAPI_ACCEPTOR_SEAL)
		if err != nil {
			return fmt.Errorf("unverifiable message from namenode: %s", err)
		}

		err = readRPCPacket(bytes.NewReader(wrapToken.Payload), rrh, resp)
		if err != nil {
			return err
		}
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
