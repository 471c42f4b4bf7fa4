package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/stateutil/stateutil/internal/kerberos"
)

// What went wrong with a delegation token, for callers that map failures
// onto exit codes.
var (
	// ErrNoDelegationToken: the credentials file holds no namenode token
	// for the namenode, or cannot be read.
	ErrNoDelegationToken = errors.New("no HDFS delegation token for the namenode")
	// ErrDelegationTokenRefused: the namenode refused the token (expired,
	// cancelled, or not one of its own).
	ErrDelegationTokenRefused = errors.New("HDFS delegation token refused")
)

// tokenFileVariable names the credentials file that YARN gives a
// container (and that Hadoop's clients read first).
const tokenFileVariable = "HADOOP_TOKEN_FILE_LOCATION"

// hdfsTokenService is what a token for the namenodes of authority names as
// its service, as Hadoop's client looks it up: ha-hdfs:NAMESERVICE for a
// nameservice, else the namenode's IP address and port (its address as
// written when the name does not resolve: connecting fails then anyway).
func hdfsTokenService(conf hadoopconf.HadoopConf, authority string, addresses []string) string {
	if slices.Contains(confList(conf["dfs.nameservices"]), authority) {
		return "ha-hdfs:" + authority
	}
	host, port, err := net.SplitHostPort(addresses[0])
	if err != nil {
		return addresses[0]
	}
	ips, err := net.LookupHost(host)
	if err != nil || len(ips) == 0 {
		return addresses[0]
	}
	return net.JoinHostPort(ips[0], port)
}

// hdfsDelegationToken is the namenode token for service in the credentials
// file path; without one, none is nil and says what the file holds. A file
// that cannot be read is an error.
func hdfsDelegationToken(path, service string) (t *hdfs.Token, none error, err error) {
	tokens, err := hdfs.ReadCredentialsFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrNoDelegationToken, tokenFileVariable, err)
	}
	if t, ok := hdfs.TokenForService(tokens, hdfs.DelegationTokenKind, service); ok {
		return t, nil, nil
	}
	var held []string
	for _, t := range tokens {
		held = append(held, t.Kind+" for "+t.Service)
	}
	if len(held) == 0 {
		held = []string{"no tokens"}
	}
	return nil, fmt.Errorf("%w: credentials file %s (%s) holds no %s for service %s (it holds: %s)",
		ErrNoDelegationToken, path, tokenFileVariable, hdfs.DelegationTokenKind, service, strings.Join(held, ", ")), nil
}

// tokenRefused reports whether err is the namenode refusing a token: its
// SASL answer names SecretManager's InvalidToken.
func tokenRefused(err error) bool {
	var remote hdfs.Error
	return errors.As(err, &remote) && strings.HasSuffix(remote.Exception(), "InvalidToken") ||
		strings.Contains(err.Error(), "InvalidToken")
}

// tokenFile is the credentials file to log in with: HADOOP_TOKEN_FILE_LOCATION
// unless a keytab login was asked for.
func tokenFile(keytab string) string {
	if keytab != "" {
		return ""
	}
	return os.Getenv(tokenFileVariable)
}

// tokenRefusedErr says which token the namenode refused, and its reason
// on one line.
func tokenRefusedErr(prefix, file string, t *hdfs.Token, err error) error {
	msg := err.Error()
	var remote hdfs.Error
	if errors.As(err, &remote) && remote.Message() != "" {
		msg = remote.Message()
	}
	reason, _, _ := strings.Cut(msg, "\n")
	owner, oerr := t.Owner()
	if oerr != nil {
		owner = "?"
	}
	return fmt.Errorf("connect %s: %w: %w: the namenode refused %s's %s for %s in %s (expired, cancelled or not its own): %s",
		prefix+"/", ErrPermission, ErrDelegationTokenRefused, owner, t.Kind, t.Service, file, reason)
}

// HDFSDelegationToken asks the namenodes of the hdfs:// URI u for a
// delegation token that renewer may renew, logged in as o says (the
// namenode gives tokens only to a Kerberos login), and names it for the
// service Hadoop's clients look it up by.
func HDFSDelegationToken(ctx context.Context, u *url.URL, o *HDFSOptions, renewer string) (*hdfs.Token, error) {
	var login kerberos.Login
	if o != nil {
		login = o.Kerberos
	}
	// Kerberos, even where a credentials file is: the namenode gives no
	// token to a login with a token.
	st, err := openHDFS(ctx, u, login, "")
	if err != nil {
		return nil, err
	}
	s := st.(*hdfsStorage)
	t, err := s.client.DelegationToken(renewer)
	if err != nil {
		return nil, s.wrap("delegation token from", "/", err)
	}
	t.Service = s.tokenService
	return t, nil
}

// hdfsKerberized reports whether the HDFS client logs in with Kerberos
// where no delegation token stands in: the configuration says so (or,
// saying nothing, the environment has Kerberos), or a keytab is given.
func hdfsKerberized(conf hadoopconf.HadoopConf, login kerberos.Login) bool {
	return kerberos.Wanted(conf["hadoop.security.authentication"]) || login.Keytab != ""
}

// HDFSKerberized reports whether HDFS is reached with Kerberos as o and
// the environment say: where processes without a Kerberos identity of
// their own need a delegation token.
func HDFSKerberized(o *HDFSOptions) (bool, error) {
	conf, err := hadoopconf.LoadFromEnvironment()
	if err != nil {
		return false, fmt.Errorf("reading Hadoop configuration: %w", err)
	}
	var login kerberos.Login
	if o != nil {
		login = o.Kerberos
	}
	return hdfsKerberized(conf, login.WithEnvironment()), nil
}
