package rpc

import (
	"errors"

	hadoop "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_common"
	"github.com/colinmarc/hdfs/v2/internal/transfer"
)

var errTokenNotSupported = errors.New("delegation tokens not accepted by namenode (it offers no TOKEN authentication)")

// doTokenHandshake logs in with the delegation token: Hadoop's TOKEN method,
// which is DIGEST-MD5 with the token's identifier as the user and its
// password as the secret; the QOP the namenode asks for (its
// hadoop.rpc.protection) then wraps every request.
func (c *NamenodeConnection) doTokenHandshake() error {
	err := c.writeSaslRequest(&hadoop.RpcSaslProto{State: hadoop.RpcSaslProto_NEGOTIATE.Enum()})
	if err != nil {
		return err
	}
	resp, err := c.readSaslResponse(hadoop.RpcSaslProto_NEGOTIATE)
	if err != nil {
		return err
	}
	var tokenAuth *hadoop.RpcSaslProto_SaslAuth
	for _, m := range resp.GetAuths() {
		if m.GetMethod() == "TOKEN" && m.GetMechanism() == "DIGEST-MD5" {
			tokenAuth = m
		}
	}
	if tokenAuth == nil {
		return errTokenNotSupported
	}

	digest := transfer.NewDigestMD5Token(c.token.GetIdentifier(), c.token.GetPassword(), tokenAuth.GetProtocol(), tokenAuth.GetServerId())
	answer, err := digest.Respond(tokenAuth.GetChallenge())
	if err != nil {
		return err
	}
	err = c.writeSaslRequest(&hadoop.RpcSaslProto{
		State: hadoop.RpcSaslProto_INITIATE.Enum(),
		Token: answer,
		Auths: []*hadoop.RpcSaslProto_SaslAuth{{
			Method:    tokenAuth.Method,
			Mechanism: tokenAuth.Mechanism,
			Protocol:  tokenAuth.Protocol,
			ServerId:  tokenAuth.ServerId,
		}},
	})
	if err != nil {
		return err
	}

	// The namenode's rspauth proves that it knows the token's password too.
	resp, err = c.readSaslResponse(hadoop.RpcSaslProto_SUCCESS)
	if err != nil {
		return err
	}
	if err := digest.Verify(resp.GetToken()); err != nil {
		return err
	}
	if digest.Protected() {
		c.transport = &saslTransport{
			basicTransport: basicTransport{clientID: c.ClientID},
			wrapper:        digestWrapper{token: digest},
		}
	}
	return nil
}
