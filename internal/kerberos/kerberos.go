// Package kerberos is how stateutil finds a Kerberos identity for Hadoop
// services (HDFS RPC, the YARN ResourceManager's REST API): the MIT-style
// krb5.conf and credential cache a kinit left, as Hadoop's own clients do.
package kerberos

import (
	"fmt"
	"os"
	"strings"

	krb "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
)

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

// Client loads $KRB5_CONFIG (default /etc/krb5.conf) and the credential
// cache $KRB5CCNAME (default /tmp/krb5cc_<uid>; FILE: caches only).
func Client() (*krb.Client, error) {
	cfgPath := os.Getenv("KRB5_CONFIG")
	if cfgPath == "" {
		cfgPath = "/etc/krb5.conf"
	}
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfgPath, err)
	}
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
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", ccPath, err)
	}
	kc, err := krb.NewFromCCache(cc, cfg, krb.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", ccPath, err)
	}
	return kc, nil
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
