// Package kerberos is how stateutil finds a Kerberos identity for Hadoop
// services (HDFS RPC, the YARN ResourceManager's REST API) as Hadoop's own
// clients do: a keytab and principal when given, else the credential cache
// a kinit left, with the MIT-style krb5.conf of KRB5_CONFIG.
package kerberos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	krb "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// What went wrong, for callers that map failures onto exit codes. Every
// error of this package that is about the identity wraps one of them.
var (
	// ErrNoTicket: no credential cache, or one without a ticket for the realm.
	ErrNoTicket = errors.New("no Kerberos ticket")
	// ErrTicketExpired: the cached ticket is past its end time.
	ErrTicketExpired = errors.New("expired Kerberos ticket")
	// ErrPrincipal: the KDC does not know a principal, or the service could
	// not read a ticket made for the principal configured for it.
	ErrPrincipal = errors.New("wrong Kerberos principal")
	// ErrKDCUnreachable: no KDC of the realm answered.
	ErrKDCUnreachable = errors.New("KDC unreachable")
	// ErrNoKey: the keytab holds no key for the principal, or none the KDC accepts.
	ErrNoKey = errors.New("keytab has no key for the principal")
	// ErrClockSkew: this machine's clock and the KDC's or the service's differ too much.
	ErrClockSkew = errors.New("clock skew too large")
	// ErrLogin: the login asked for is incomplete (a keytab without a principal).
	ErrLogin = errors.New("incomplete Kerberos login")
)

// Login is how to get an identity: from Keytab as Principal when Keytab
// is set, else from the credential cache ($KRB5CCNAME).
type Login struct {
	Keytab    string
	Principal string
}

// WithEnvironment fills what l leaves empty from STATEUTIL_KEYTAB and
// STATEUTIL_PRINCIPAL.
func (l Login) WithEnvironment() Login {
	if l.Keytab == "" {
		l.Keytab = os.Getenv("STATEUTIL_KEYTAB")
	}
	if l.Principal == "" {
		l.Principal = os.Getenv("STATEUTIL_PRINCIPAL")
	}
	return l
}

// Wanted decides from a Hadoop setting (kerberos or simple) when the
// configuration has it, else from the presence of a Kerberos environment
// (KRB5CCNAME or KRB5_CONFIG).
func Wanted(setting string) bool {
	switch strings.ToLower(setting) {
	case "kerberos":
		return true
	case "simple":
		return false
	}
	return os.Getenv("KRB5CCNAME") != "" || os.Getenv("KRB5_CONFIG") != ""
}

// Client loads $KRB5_CONFIG (default /etc/krb5.conf) and logs in as l
// says: with a keytab it asks the KDC for a ticket now; from the
// credential cache $KRB5CCNAME (default /tmp/krb5cc_<uid>; FILE: caches
// only) it checks that the cached ticket is still valid.
func Client(l Login) (*krb.Client, error) {
	if l.Keytab == "" && l.Principal != "" {
		return nil, fmt.Errorf("%w: principal %s without a keytab (--keytab or STATEUTIL_KEYTAB); a credential cache names its own principal", ErrLogin, l.Principal)
	}
	if l.Keytab != "" && l.Principal == "" {
		return nil, fmt.Errorf("%w: keytab %s without a principal (--principal or STATEUTIL_PRINCIPAL)", ErrLogin, l.Keytab)
	}
	cfgPath := os.Getenv("KRB5_CONFIG")
	if cfgPath == "" {
		cfgPath = "/etc/krb5.conf"
	}
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfgPath, err)
	}
	if l.Keytab != "" {
		return fromKeytab(l, cfg)
	}
	return fromCache(cfg)
}

func fromKeytab(l Login, cfg *krbconfig.Config) (*krb.Client, error) {
	name, realm, ok := strings.Cut(l.Principal, "@")
	if !ok {
		realm = cfg.LibDefaults.DefaultRealm
	}
	if name == "" || realm == "" {
		return nil, fmt.Errorf("%w: principal %q names no realm and %s sets no default_realm", ErrLogin, l.Principal, cfgName())
	}
	kt, err := keytab.Load(l.Keytab)
	if err != nil {
		return nil, fmt.Errorf("keytab %s: %w", l.Keytab, err)
	}
	if !holds(kt, name, realm) {
		return nil, fmt.Errorf("%w: keytab %s holds no key for %s@%s (it holds: %s)", ErrNoKey, l.Keytab, name, realm, strings.Join(principals(kt), ", "))
	}
	kc := krb.NewWithKeytab(name, realm, kt, cfg, krb.DisablePAFXFAST(true))
	if err := kc.Login(); err != nil {
		err, _ = Classify(err)
		return nil, fmt.Errorf("login as %s@%s with keytab %s: %w", name, realm, l.Keytab, err)
	}
	return kc, nil
}

func fromCache(cfg *krbconfig.Config) (*krb.Client, error) {
	ccPath := os.Getenv("KRB5CCNAME")
	switch {
	case strings.HasPrefix(ccPath, "FILE:"):
		ccPath = strings.TrimPrefix(ccPath, "FILE:")
	case strings.Contains(ccPath, ":"):
		return nil, fmt.Errorf("credential cache %q: only FILE: caches are supported", ccPath)
	case ccPath == "":
		ccPath = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	cc, err := credentials.LoadCCache(ccPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: credential cache %s does not exist (run kinit, or give --keytab and --principal)", ErrNoTicket, ccPath)
	}
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", ccPath, err)
	}
	realm := cc.GetClientRealm()
	who := cc.GetClientPrincipalName().PrincipalNameString() + "@" + realm
	tgt, ok := cc.GetEntry(types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", realm}})
	if !ok {
		return nil, fmt.Errorf("%w: credential cache %s holds no ticket-granting ticket for %s (run kinit)", ErrNoTicket, ccPath, who)
	}
	if now := time.Now(); !now.Before(tgt.EndTime) {
		return nil, fmt.Errorf("%w: the ticket of %s in %s expired at %s (run kinit)", ErrTicketExpired, who, ccPath, tgt.EndTime.UTC().Format(time.RFC3339))
	}
	kc, err := krb.NewFromCCache(cc, cfg, krb.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", ccPath, err)
	}
	return kc, nil
}

func cfgName() string {
	if p := os.Getenv("KRB5_CONFIG"); p != "" {
		return p
	}
	return "/etc/krb5.conf"
}

func holds(kt *keytab.Keytab, name, realm string) bool {
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name {
			return true
		}
	}
	return false
}

// principals lists the keytab's principals once each, in keytab order.
func principals(kt *keytab.Keytab) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range kt.Entries {
		p := e.Principal.String()
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{"nothing"}
	}
	return out
}

// kdcFailures are what gokrb5 and Java's GSS report, by their text (neither
// keeps a typed cause), mapped onto this package's errors.
var kdcFailures = []struct {
	text string
	kind error
	hint string
}{
	{"KDC_ERR_C_PRINCIPAL_UNKNOWN", ErrPrincipal, "the KDC does not know the client principal"},
	{"KDC_ERR_S_PRINCIPAL_UNKNOWN", ErrPrincipal, "the KDC does not know the service principal (check dfs.namenode.kerberos.principal)"},
	{"KDC_ERR_PREAUTH_FAILED", ErrNoKey, "the KDC refused the keytab's key (an old keytab?)"},
	{"KRB_AP_ERR_SKEW", ErrClockSkew, "the KDC's clock and this machine's differ by more than the allowed skew"},
	{"Clock skew too great", ErrClockSkew, "the service's clock and this machine's differ by more than the allowed skew"},
	{"KRB_AP_ERR_TKT_EXPIRED", ErrTicketExpired, "the ticket expired (run kinit)"},
	{"Checksum failed", ErrPrincipal, "the service could not read the ticket: it is not the principal configured for it (check dfs.namenode.kerberos.principal)"},
	{"Cannot find key of appropriate type", ErrPrincipal, "the service could not read the ticket: it is not the principal configured for it (check dfs.namenode.kerberos.principal)"},
	{"GSS initiate failed", ErrPrincipal, "the service refused the ticket: its principal is not the one configured for it (check dfs.namenode.kerberos.principal), or its clock is far from this machine's"},
	{"error sending to a KDC", ErrKDCUnreachable, "no KDC of the realm answered"},
	{"communication error with KDC", ErrKDCUnreachable, "no KDC of the realm answered"},
	{"failed to communicate with KDC", ErrKDCUnreachable, "no KDC of the realm answered"},
}

// Classify wraps a Kerberos failure (from gokrb5, or a service's GSS
// error) in this package's error for it; ok is false for other errors.
func Classify(err error) (classified error, ok bool) {
	if err == nil {
		return nil, false
	}
	for _, k := range []error{ErrNoTicket, ErrTicketExpired, ErrPrincipal, ErrKDCUnreachable, ErrNoKey, ErrClockSkew, ErrLogin} {
		if errors.Is(err, k) {
			return err, true
		}
	}
	msg := err.Error()
	var detailed interface{ Message() string }
	if errors.As(err, &detailed) {
		// A Hadoop service's exception keeps its cause in the message.
		msg += ": " + oneLine(detailed.Message())
	}
	for _, f := range kdcFailures {
		if strings.Contains(msg, f.text) {
			return fmt.Errorf("%w: %s: %s", f.kind, f.hint, oneLine(msg)), true
		}
	}
	return err, false
}

func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// ServicePrincipal is the principal of a service on host, from a Hadoop
// principal setting such as HTTP/_HOST@REALM (_HOST is the host, the realm
// comes from krb5.conf's domain mapping), else def/host.
func ServicePrincipal(setting, def, host string) string {
	if setting == "" {
		return def + "/" + host
	}
	name, _, _ := strings.Cut(setting, "@")
	return strings.ReplaceAll(name, "_HOST", host)
}
