package yarn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/colinmarc/hdfs/v2"

	"github.com/stateutil/stateutil/internal/kerberos"
)

// The REST JSON's two spellings: a ResourceManager that answers
// new-application in the documented names gets the documented submission,
// one that answers in bean names (the minicluster) gets bean names. Its
// credentials carry the token under its service, in the form Hadoop's
// Token.encodeToUrlString gave for it (testdata/hadoop.token.url, written
// by the secured test cluster's url-token from testdata/hadoop.token). The
// ResourceManager here only records what it is sent: the minicluster test
// harness serves bean names only, so the documented side has no real
// server to meet in these tests (TestRealResourceManager is the real one).
func TestSubmitSpeaksTheSpellingItIsAnswered(t *testing.T) {
	tokens, err := hdfs.ReadCredentialsFile("testdata/hadoop.token")
	if err != nil || len(tokens) != 1 {
		t.Fatalf("testdata/hadoop.token: %d tokens, %v", len(tokens), err)
	}
	hadoopURL, err := os.ReadFile("testdata/hadoop.token.url")
	if err != nil {
		t.Fatal(err)
	}
	const service = "127.0.0.1:35349"
	for _, c := range []struct {
		newApp, idKey, specKey string
		// tokens is where the credentials' tokens are, as the
		// ResourceManager's JSON reader maps them.
		tokens func(spec map[string]any) string
	}{
		{`{"application-id":"application_1_0001","maximum-resource-capability":{"memory":8192,"vCores":32}}`, "application-id", "am-container-spec",
			func(spec map[string]any) string {
				entries, _ := dig(spec, "credentials", "tokens", "entry").([]any)
				if len(entries) != 1 {
					return fmt.Sprintf("entries %v", entries)
				}
				e, _ := entries[0].(map[string]any)
				return fmt.Sprintf("%v=%v", e["key"], e["value"])
			}},
		{`{"applicationId":"application_1_0001","maximumResourceCapability":{"memory":8192,"vCores":32}}`, "applicationId", "containerLaunchContextInfo",
			func(spec map[string]any) string {
				m, _ := dig(spec, "credentials", "tokens").(map[string]any)
				if len(m) != 1 {
					return fmt.Sprintf("tokens %v", m)
				}
				return fmt.Sprintf("%s=%v", service, m[service])
			}},
	} {
		var submitted map[string]any
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/ws/v1/cluster/apps/new-application":
				io.WriteString(w, c.newApp)
			case "/ws/v1/cluster/apps":
				if err := json.NewDecoder(r.Body).Decode(&submitted); err != nil {
					http.Error(w, err.Error(), 400)
				}
				w.WriteHeader(http.StatusAccepted)
			default:
				http.NotFound(w, r)
			}
		}))
		cl, err := NewClient(srv.URL, kerberos.Login{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := cl.NewApplication(context.Background())
		if err != nil || id != "application_1_0001" {
			t.Fatalf("new-application: %q, %v", id, err)
		}
		err = cl.Submit(context.Background(), Submission{ID: id, Name: "n", Queue: "q", Command: "true", Env: map[string]string{"A": "1"},
			Resources: map[string]LocalResource{"f": {URL: "hdfs://nn/f", Size: 1, Timestamp: 2}}, MemoryMB: 128, VCores: 1, MaxAttempts: 1, Tokens: tokens})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if submitted[c.idKey] != id || submitted[c.specKey] == nil {
			t.Fatalf("answered with %s: submitted %v", c.idKey, submitted)
		}
		spec, _ := submitted[c.specKey].(map[string]any)
		if got, want := c.tokens(spec), service+"="+strings.TrimSpace(string(hadoopURL)); got != want {
			t.Errorf("answered with %s: credentials' token %s, want %s", c.idKey, got, want)
		}
	}
}

// dig follows keys through nested JSON objects.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// Against the harness's real ResourceManager: new-application answers,
// in bean names, and an unknown application's state is an error naming it.
func TestRealResourceManager(t *testing.T) {
	rm := os.Getenv("STATEUTIL_TEST_YARN")
	if rm == "" {
		if os.Getenv("STATEUTIL_REQUIRE_HDFS") == "1" || (os.Getenv("CI") != "" && os.Getenv("CI") != "false") {
			t.Fatal("STATEUTIL_TEST_YARN is not set (required under CI or STATEUTIL_REQUIRE_HDFS=1)")
		}
		t.Skip("STATEUTIL_TEST_YARN is not set; start the test cluster with scripts/hdfs-start.sh && . .cache/hdfs.env")
	}
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	cl, err := NewClient(rm, kerberos.Login{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.NewApplication(context.Background())
	if err != nil || !strings.HasPrefix(id, "application_") {
		t.Fatalf("new-application: %q, %v", id, err)
	}
	t.Logf("new-application gave %s, bean names: %v", id, cl.beans)
	if _, _, err := cl.state(context.Background(), "application_1_9999"); err == nil || !strings.Contains(err.Error(), "application_1_9999") {
		t.Fatalf("state of an unknown application: %v", err)
	}
}

// Kerberos follows the Hadoop configuration before the environment, as
// for HDFS: a core-site.xml saying simple keeps user.name even with a
// credential cache set; one saying kerberos needs a readable cache, and a
// missing one is an error naming it rather than an unauthenticated client.
// (No KDC runs here: the SPNEGO exchange itself is gokrb5's.)
func TestKerberosFollowsTheHadoopConfiguration(t *testing.T) {
	dir := t.TempDir()
	site := func(auth string) {
		xml := `<configuration><property><name>hadoop.http.authentication.type</name><value>` + auth + `</value></property>
<property><name>hadoop.http.authentication.kerberos.principal</name><value>HTTP/_HOST@EXAMPLE.COM</value></property></configuration>`
		if err := os.WriteFile(filepath.Join(dir, "core-site.xml"), []byte(xml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	krb5 := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HADOOP_CONF_DIR", dir)
	t.Setenv("HADOOP_USER_NAME", "alice")
	t.Setenv("KRB5_CONFIG", krb5)
	cache := filepath.Join(dir, "krb5cc")
	t.Setenv("KRB5CCNAME", "FILE:"+cache)

	site("simple")
	cl, err := NewClient("http://rm1.example.com:8088", kerberos.Login{})
	if err != nil || cl.User != "alice" || cl.SPN != "" {
		t.Fatalf("simple: %+v, %v", cl, err)
	}
	site("kerberos")
	if _, err := NewClient("http://rm1.example.com:8088", kerberos.Login{}); err == nil || !strings.Contains(err.Error(), cache) {
		t.Fatalf("kerberos without a credential cache: %v", err)
	}
	keytab := filepath.Join(dir, "no.keytab")
	if _, err := NewClient("http://rm1.example.com:8088", kerberos.Login{Keytab: keytab, Principal: "alice"}); err == nil || !strings.Contains(err.Error(), keytab) {
		t.Fatalf("kerberos with a keytab login: %v, want the keytab's error, not the cache's", err)
	}
}
