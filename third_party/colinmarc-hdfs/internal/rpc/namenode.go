package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	hadoop "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_common"
	hdfs "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_hdfs"
	krb "github.com/jcmturner/gokrb5/v8/client"
	"google.golang.org/protobuf/proto"
)

const (
	rpcVersion              byte = 0x09
	serviceClass            byte = 0x0
	noneAuthProtocol        byte = 0x0
	saslAuthProtocol        byte = 0xdf
	protocolClass                = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
	protocolClassVersion         = 1
	handshakeCallID              = -3
	standbyExceptionClass        = "org.apache.hadoop.ipc.StandbyException"
	retriableExceptionClass      = "org.apache.hadoop.ipc.RetriableException"
	safeModeExceptionClass       = "org.apache.hadoop.hdfs.server.namenode.SafeModeException"
)

const (
	leaseRenewInterval = 1 * time.Second

	// A call goes to the next namenode when one answers that it is standby
	// or its connection fails, for at most failoverRounds rounds of all
	// namenodes; after each round it waits, from failoverBackoff doubling up
	// to failoverBackoffMax, as a failover takes a moment (12.7 s in all: a
	// ZooKeeper session's expiry, fencing and the new active's catching up
	// take seconds). The retry of a
	// call keeps its call ID, so that a namenode that already did it (or
	// whose predecessor did, as its retry cache holds what the edit log
	// says) answers as it did instead of doing it again.
	failoverRounds     = 8
	failoverBackoff    = 100 * time.Millisecond
	failoverBackoffMax = 10 * time.Second

	// A call the namenode answers with a RetriableException (busy, or an
	// HA namenode starting up) or a SafeModeException is sent again to the
	// same namenode, as Hadoop's client's retry policies do, at most
	// busyRetries times, waiting from failoverBackoff doubling up to
	// failoverBackoffMax in between (12.7 s in all), with its call ID.
	busyRetries = 7
)

// NamenodeConnection represents an open connection to a namenode.
type NamenodeConnection struct {
	ClientID   []byte
	ClientName string
	User       string

	currentRequestID int32

	kerberosClient               *krb.Client
	kerberosServicePrincipleName string
	kerberosRealm                string

	token *hadoop.TokenProto

	dialFunc  func(ctx context.Context, network, addr string) (net.Conn, error)
	conn      net.Conn
	host      *namenodeHost
	hostList  []*namenodeHost
	next      int // index in hostList of the namenode to connect to next
	transport transport

	reqLock sync.Mutex
	done    chan struct{}
}

// NamenodeConnectionOptions represents the configurable options available
// for a NamenodeConnection.
type NamenodeConnectionOptions struct {
	// Addresses specifies the namenode(s) to connect to.
	Addresses []string
	// User specifies which HDFS user the client will act as. It is required
	// unless kerberos authentication is enabled, in which case it is overridden
	// by the username set in KerberosClient.
	User string
	// DialFunc is used to connect to the namenodes. If nil, then
	// (&net.Dialer{}).DialContext is used.
	DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	// KerberosClient is used to connect to kerberized HDFS clusters. If provided,
	// the NamenodeConnection will always mutually athenticate when connecting
	// to the namenode(s).
	KerberosClient *krb.Client
	// KerberosServicePrincipleName specifiesthe Service Principle Name
	// (<SERVICE>/<FQDN>) for the namenode(s). Like in the
	// dfs.namenode.kerberos.principal property of core-site.xml, the special
	// string '_HOST' can be substituted for the hostname in a multi-namenode
	// setup (for example: 'nn/_HOST@EXAMPLE.COM'). It is required if
	// KerberosClient is provided.
	KerberosServicePrincipleName string
	// DelegationToken, when KerberosClient is nil, is what the connection
	// logs in with (Hadoop's TOKEN authentication); the namenode takes the
	// user from it.
	DelegationToken *hadoop.TokenProto
}

type namenodeHost struct {
	address   string
	lastError error
}

// NewNamenodeConnectionWithOptions creates a new connection to a namenode with
// the given options and performs an initial handshake.
func NewNamenodeConnection(options NamenodeConnectionOptions) (*NamenodeConnection, error) {
	// Build the list of hosts to be used for failover.
	hostList := make([]*namenodeHost, len(options.Addresses))
	for i, addr := range options.Addresses {
		hostList[i] = &namenodeHost{address: addr}
	}

	var user, realm string
	user = options.User
	if options.KerberosClient != nil {
		creds := options.KerberosClient.Credentials
		user = creds.UserName()
		realm = creds.Realm()
	} else if user == "" && options.DelegationToken == nil {
		return nil, errors.New("user not specified")
	}

	// The ClientID is reused here both in the RPC headers (which requires a
	// "globally unique" ID) and as the "client name" in various requests.
	clientId := newClientID()
	c := &NamenodeConnection{
		ClientID:   clientId,
		ClientName: "go-hdfs-" + string(clientId),
		User:       user,

		kerberosClient:               options.KerberosClient,
		kerberosServicePrincipleName: options.KerberosServicePrincipleName,
		kerberosRealm:                realm,
		token:                        options.DelegationToken,

		dialFunc:  options.DialFunc,
		hostList:  hostList,
		transport: &basicTransport{clientID: clientId},

		done: make(chan struct{}),
	}

	err := c.resolveConnection()
	if err != nil {
		return nil, err
	}

	// Periodically renew any file leases.
	go c.renewLeases()

	return c, nil
}

// resolveConnection connects to the first namenode, from the next one on in
// turn, that accepts a connection.
func (c *NamenodeConnection) resolveConnection() error {
	if c.conn != nil {
		return nil
	}

	var err error
	if c.host != nil {
		err = c.host.lastError
	}

	for range c.hostList {
		if c.dialFunc == nil {
			c.dialFunc = (&net.Dialer{}).DialContext
		}

		host := c.hostList[c.next]
		c.host = host
		c.conn, err = c.dialFunc(context.Background(), "tcp", host.address)
		if err != nil {
			c.markFailure(err)
			continue
		}

		err = c.doNamenodeHandshake()
		if err != nil {
			c.markFailure(err)
			continue
		}

		break
	}

	if c.conn == nil {
		return fmt.Errorf("no available namenodes: %w", err)
	}

	return nil
}

// markFailure drops the connection to the current namenode and makes the
// next one in the list the one to try.
func (c *NamenodeConnection) markFailure(err error) {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.host.lastError = err
	c.next = (c.next + 1) % len(c.hostList)
}

// Execute performs an rpc call. It does this by sending req over the wire and
// unmarshaling the result into resp.
func (c *NamenodeConnection) Execute(method string, req proto.Message, resp proto.Message) error {
	c.reqLock.Lock()
	defer c.reqLock.Unlock()

	c.currentRequestID++
	requestID := c.currentRequestID

	wait, busyWait, busy := failoverBackoff, failoverBackoff, 0
	for attempt := 1; ; attempt++ {
		// Only when no namenode accepts a connection at all does this fail
		// at once.
		err := c.resolveConnection()
		if err != nil {
			return err
		}

		err = c.transport.writeRequest(c.conn, method, requestID, req)
		if err == nil {
			err = c.transport.readResponse(c.conn, method, requestID, resp)
		}
		var nerr *NamenodeError
		// The lease renewer does not wait: it calls again each second, and
		// would hold every other call back while it waited.
		if errors.As(err, &nerr) && method != "renewLease" &&
			(nerr.exception == retriableExceptionClass || nerr.exception == safeModeExceptionClass) {
			if busy == busyRetries {
				return err
			}
			busy++
			attempt-- // not a failover attempt
			time.Sleep(busyWait)
			busyWait = min(2*busyWait, failoverBackoffMax)
			continue
		}
		if err == nil || (nerr != nil && nerr.exception != standbyExceptionClass) {
			return err
		}

		// A standby namenode, or a connection that failed: whether the call
		// reached the namenode or not, the connection is of no further use.
		c.markFailure(err)
		// A namenode that hangs costs a timeout: one for each namenode at most.
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() && attempt >= len(c.hostList) {
			return err
		}
		if attempt == failoverRounds*len(c.hostList) {
			return fmt.Errorf("%s: %d attempts failed, the last with: %w", method, attempt, err)
		}
		if attempt%len(c.hostList) == 0 {
			time.Sleep(wait)
			wait = min(2*wait, failoverBackoffMax)
		}
	}
}

// A handshake packet:
// +-----------------------------------------------------------+
// |  Header, 4 bytes ("hrpc")                                 |
// +-----------------------------------------------------------+
// |  Version, 1 byte (default verion 0x09)                    |
// +-----------------------------------------------------------+
// |  RPC service class, 1 byte (0x00)                         |
// +-----------------------------------------------------------+
// |  Auth protocol, 1 byte (Auth method None = 0x00)          |
// +-----------------------------------------------------------+
//
//	If the auth protocol is something other than 'none', the authentication
//	handshake happens here. Otherwise, everything can be sent as one packet.
//
// +-----------------------------------------------------------+
// |  uint32 length of the next two parts                      |
// +-----------------------------------------------------------+
// |  varint length + RpcRequestHeaderProto                    |
// +-----------------------------------------------------------+
// |  varint length + IpcConnectionContextProto                |
// +-----------------------------------------------------------+
func (c *NamenodeConnection) doNamenodeHandshake() error {
	authProtocol := noneAuthProtocol
	if c.kerberosClient != nil || c.token != nil {
		authProtocol = saslAuthProtocol
	}

	rpcHeader := []byte{
		0x68, 0x72, 0x70, 0x63, // "hrpc"
		rpcVersion, serviceClass, authProtocol,
	}

	_, err := c.conn.Write(rpcHeader)
	if err != nil {
		return err
	}

	switch {
	case c.kerberosClient != nil:
		err = c.doKerberosHandshake()
	case c.token != nil:
		err = c.doTokenHandshake()
	}
	if err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}

	rrh := newRPCRequestHeader(handshakeCallID, c.ClientID)
	cc := newConnectionContext(c.User, c.kerberosRealm)
	if c.kerberosClient == nil && c.token != nil {
		// The token names the user; Hadoop's client sends none with it.
		cc.UserInfo = nil
	}
	packet, err := makeRPCPacket(rrh, cc)
	if err != nil {
		return err
	}

	_, err = c.conn.Write(packet)
	return err
}

// renewLeases periodically renews all leases for the connection.
func (c *NamenodeConnection) renewLeases() {
	ticker := time.NewTicker(leaseRenewInterval)
	defer ticker.Stop()

	for {
		select {
		case <-ticker.C:
			req := &hdfs.RenewLeaseRequestProto{ClientName: proto.String(c.ClientName)}
			resp := &hdfs.RenewLeaseResponseProto{}

			// Ignore any errors.
			c.Execute("renewLease", req, resp)
		case <-c.done:
			return
		}
	}
}

// Close terminates all underlying socket connections to remote server.
func (c *NamenodeConnection) Close() error {
	close(c.done)

	// Ensure that we're not concurrently renewing leases.
	c.reqLock.Lock()
	defer c.reqLock.Unlock()

	if c.conn != nil {
		return c.conn.Close()
	}

	return nil
}

func newRPCRequestHeader(id int32, clientID []byte) *hadoop.RpcRequestHeaderProto {
	return &hadoop.RpcRequestHeaderProto{
		RpcKind:  hadoop.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:    hadoop.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:   proto.Int32(id),
		ClientId: clientID,
	}
}

func newRequestHeader(methodName string) *hadoop.RequestHeaderProto {
	return &hadoop.RequestHeaderProto{
		MethodName:                 proto.String(methodName),
		DeclaringClassProtocolName: proto.String(protocolClass),
		ClientProtocolVersion:      proto.Uint64(uint64(protocolClassVersion)),
	}
}

func newConnectionContext(user, kerberosRealm string) *hadoop.IpcConnectionContextProto {
	if kerberosRealm != "" {
		user = user + "@" + kerberosRealm
	}

	return &hadoop.IpcConnectionContextProto{
		UserInfo: &hadoop.UserInformationProto{
			EffectiveUser: proto.String(user),
		},
		Protocol: proto.String(protocolClass),
	}
}
