package cmd

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// On kerberized HDFS, shard --yarn hands the application an HDFS
// delegation token of the submitting user that the ResourceManager's
// principal may renew, and nothing of the user's Kerberos login: the
// ResourceManager here records the submission (and reports the
// application killed). Hadoop's own client reads the submitted token as
// alice's, renewable by yarn; with it alone, as a container has it, the
// source reads.
func TestSecureHDFSShardSubmitsADelegationToken(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	dir := s.Dir(t)
	src := dir + "/src"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "300", "--output", src)
	t.Setenv("HADOOP_CONF_DIR", s.ConfWith(t, map[string]string{
		"yarn.resourcemanager.principal": "yarn/_HOST@" + s.Realm,
		"yarn.resourcemanager.address":   "localhost:8032",
		// The recording ResourceManager ignores SPNEGO; the ticket asked
		// for it must still be one the KDC gives.
		"hadoop.http.authentication.kerberos.principal": s.Service,
	}))

	var mu sync.Mutex
	var submitted []byte
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ws/v1/cluster/apps/new-application":
			io.WriteString(w, `{"applicationId":"application_1_0001","maximumResourceCapability":{"memory":8192,"vCores":8}}`)
		case r.URL.Path == "/ws/v1/cluster/apps" && r.Method == http.MethodPost:
			mu.Lock()
			submitted, _ = io.ReadAll(r.Body)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		case strings.HasSuffix(r.URL.Path, "/state"):
			io.WriteString(w, `{"state":"KILLED","diagnostics":"recorded only"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer rm.Close()

	code, _, errOut := run(t, "rescale", src, "--parallelism", "3", "--output", dir+"/dst",
		"--yarn", rm.URL, "--shards", "2", "--yarn-binary", "/bin/true")
	if code == 0 || !strings.Contains(errOut, "HDFS_DELEGATION_TOKEN for "+s.Addr+", renewer yarn/localhost@"+s.Realm) {
		t.Fatalf("exit %d, stderr: %s", code, errOut)
	}
	mu.Lock()
	body := submitted
	mu.Unlock()
	var sub struct {
		Spec struct {
			Environment map[string]string
			Commands    []string
			Credentials struct{ Tokens map[string]string }
		} `json:"containerLaunchContextInfo"`
	}
	if err := json.Unmarshal(body, &sub); err != nil {
		t.Fatalf("submission %s: %v", body, err)
	}
	if len(sub.Spec.Credentials.Tokens) != 1 || sub.Spec.Credentials.Tokens[s.Addr] == "" {
		t.Fatalf("credentials' tokens %v, want one for %s", sub.Spec.Credentials.Tokens, s.Addr)
	}
	for _, secret := range []string{s.Ccache, s.Keytab, "KRB5CCNAME", "STATEUTIL_KEYTAB"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the submission names %s: %s", secret, body)
		}
	}

	file := credentialsFile(t, s.Addr, sub.Spec.Credentials.Tokens[s.Addr])
	want := "kind=HDFS_DELEGATION_TOKEN service=" + s.Addr + " owner=" + s.Principal + " renewer=yarn"
	if got := s.ReadTokens(t, file); got != want {
		t.Fatalf("Hadoop reads %q in the submitted token, want %q", got, want)
	}
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))
	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", file)
	if out := mustRun(t, "verify", src); !strings.Contains(out, "OK: no problems found") {
		t.Fatalf("verify with the submitted token alone:\n%s", out)
	}
}

// credentialsFile writes a token in Token.encodeToUrlString form as the
// one token of a credentials file of version 0 (Credentials.writeTokenStorageToStream:
// "HDTS", 0, the count, the alias and the token's Writable, no secrets).
func credentialsFile(t *testing.T, alias, urlToken string) string {
	t.Helper()
	writable, err := base64.RawURLEncoding.DecodeString(urlToken)
	if err != nil {
		t.Fatalf("token %q: %v", urlToken, err)
	}
	if len(alias) > 127 {
		t.Fatalf("alias %q needs more than a one-byte length", alias)
	}
	b := append([]byte("HDTS\x00\x01"), byte(len(alias)))
	b = append(append(b, alias...), writable...)
	b = append(b, 0)
	file := filepath.Join(t.TempDir(), "submitted.token")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// On the kerberized cluster's YARN (SPNEGO to the ResourceManager, which
// renews the token), a rescale in 2 shards gives what the single process
// gives. The shards ran with the application's delegation token alone:
// each saw HADOOP_TOKEN_FILE_LOCATION holding alice's HDFS token, and no
// Kerberos cache, keytab or login setting in its environment or its
// container's directory.
func TestSecureYARNShardsWithADelegationToken(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	rm, cp := yarnEnvOf(t, "STATEUTIL_TEST_SECURE_YARN", "scripts/hdfs-start.sh --secure && . .cache/hdfs-secure.env")
	dir := s.Dir(t)
	src, single, sharded := dir+"/src", dir+"/single", dir+"/sharded"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "2000", "--output", src)
	mustRun(t, "rescale", src, "--parallelism", "3", "--output", single, "-q")

	// The shards' binary: a wrapper that keeps what its container gave it.
	seen := t.TempDir()
	wrapper := filepath.Join(t.TempDir(), "stateutil")
	script := "#!/bin/bash\nd=" + seen + "/$YARN_SHELL_ID.$$\nmkdir -p $d\nenv >$d/env\nls -la >$d/files\n" +
		"cp \"$HADOOP_TOKEN_FILE_LOCATION\" $d/tokens\nexec " + stateutilBinary(t) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustExe(t, nil, append([]string{"rescale", src, "--parallelism", "3", "--output", sharded, "--yarn-binary", wrapper,
		"--yarn-shard-env", "HADOOP_CONF_DIR=" + s.Conf}, yarnArgs(rm, cp, 2)...)...)
	t.Logf("rescale in 2 shards on the kerberized YARN: %s", time.Since(start).Round(time.Millisecond))
	mustEqual(t, single, sharded)

	runs, err := filepath.Glob(filepath.Join(seen, "*"))
	if err != nil || len(runs) < 2 {
		t.Fatalf("the wrapper recorded %d shard runs (%v), want 2", len(runs), err)
	}
	for _, r := range runs {
		env, err := os.ReadFile(filepath.Join(r, "env"))
		if err != nil {
			t.Fatal(err)
		}
		files, err := os.ReadFile(filepath.Join(r, "files"))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"KRB5CCNAME=", "STATEUTIL_KEYTAB=", "STATEUTIL_PRINCIPAL=", s.Keytab, s.Ccache, ".keytab", "ccache"} {
			if strings.Contains(string(env), secret) || strings.Contains(string(files), secret) {
				t.Errorf("shard run %s had %q:\nenv:\n%s\nfiles:\n%s", filepath.Base(r), secret, env, files)
			}
		}
		if !strings.Contains(string(env), "HADOOP_TOKEN_FILE_LOCATION=") {
			t.Errorf("shard run %s had no HADOOP_TOKEN_FILE_LOCATION", filepath.Base(r))
		}
		tokens, err := hdfs.ReadCredentialsFile(filepath.Join(r, "tokens"))
		if err != nil {
			t.Fatal(err)
		}
		tok, ok := hdfs.TokenForService(tokens, hdfs.DelegationTokenKind, s.Addr)
		if !ok {
			t.Fatalf("shard run %s: no %s for %s among %d tokens", filepath.Base(r), hdfs.DelegationTokenKind, s.Addr, len(tokens))
		}
		if owner, err := tok.Owner(); err != nil || owner != s.Principal {
			t.Errorf("shard run %s: the token's owner %q (%v), want %s", filepath.Base(r), owner, err, s.Principal)
		}
	}
}
