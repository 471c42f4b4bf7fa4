package kerberos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWantedFollowsTheSettingThenTheEnvironment(t *testing.T) {
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	for setting, want := range map[string]bool{"kerberos": true, "KERBEROS": true, "simple": false, "": false} {
		if got := Wanted(setting); got != want {
			t.Errorf("Wanted(%q) without a Kerberos environment = %v", setting, got)
		}
	}
	t.Setenv("KRB5CCNAME", "/tmp/x")
	for setting, want := range map[string]bool{"kerberos": true, "simple": false, "": true} {
		if got := Wanted(setting); got != want {
			t.Errorf("Wanted(%q) with KRB5CCNAME set = %v", setting, got)
		}
	}
}

func TestServicePrincipal(t *testing.T) {
	for _, c := range [][4]string{
		{"", "HTTP", "rm1.example.com", "HTTP/rm1.example.com"},
		{"HTTP/_HOST@EXAMPLE.COM", "HTTP", "rm1.example.com", "HTTP/rm1.example.com"},
		{"yarn-web/rm.example.com@EXAMPLE.COM", "HTTP", "rm1.example.com", "yarn-web/rm.example.com"},
	} {
		if got := ServicePrincipal(c[0], c[1], c[2]); got != c[3] {
			t.Errorf("ServicePrincipal(%q, %q, %q) = %q, want %q", c[0], c[1], c[2], got, c[3])
		}
	}
}

// A credential cache that is missing or of a kind gokrb5 cannot read is
// an error naming it, not a client without a ticket.
func TestClientNamesTheCache(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5_CONFIG", conf)
	missing := filepath.Join(dir, "no-cache")
	for cache, want := range map[string]string{
		"FILE:" + missing:      missing,
		"KEYRING:persistent:0": "only FILE: caches",
	} {
		t.Setenv("KRB5CCNAME", cache)
		if _, err := Client(Login{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("KRB5CCNAME=%s: %v, want an error with %q", cache, err, want)
		}
	}
	t.Setenv("KRB5_CONFIG", filepath.Join(dir, "no-conf"))
	if _, err := Client(Login{}); err == nil || !strings.Contains(err.Error(), "no-conf") {
		t.Errorf("a missing krb5.conf: %v", err)
	}
}
