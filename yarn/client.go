// Package yarn submits and watches applications through a YARN
// ResourceManager's REST API (new-application, submit, state), so that
// stateutil reaches a cluster without a JVM, and runs a sharded copy's
// shards as one application of Hadoop's DistributedShell
// ApplicationMaster (see Run).
//
// The ResourceManager's JSON comes in two spellings. Hadoop 3.3's
// ResourceManager registers a JAXBContextResolver (webapp/JAXBContextResolver.java)
// whose Jersey JSONConfiguration.natural() context covers NewApplication,
// ApplicationSubmissionContextInfo, ContainerLaunchContextInfo and
// LocalResourceInfo, so it honours their @XmlElement names: application-id,
// am-container-spec, local-resources, resource, as documented. The test
// harness's ResourceManager (the shaded hadoop-client-minicluster 3.3.6)
// answers in the Java bean names instead (applicationId,
// containerLaunchContextInfo, plain maps and lists). The client reads
// both, and submits in the spelling new-application was answered in.
package yarn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/stateutil/stateutil/internal/kerberos"
)

// ErrYARN reports a ResourceManager that refused or failed a request.
var ErrYARN = errors.New("yarn")

// Client talks to one ResourceManager.
type Client struct {
	// RM is the ResourceManager's web address, http(s)://host:port.
	RM string
	// User is the user.name given to a ResourceManager with simple
	// authentication: $HADOOP_USER_NAME, else the OS user; empty with
	// Kerberos.
	User string
	// SPN is the service principal SPNEGO asks a ticket for, with Kerberos.
	SPN string
	do  func(*http.Request) (*http.Response, error)
	// beans is set once the ResourceManager answered in bean names.
	beans bool
}

// NewClient returns a client of the ResourceManager at rm. Kerberos
// (SPNEGO) follows the HDFS client's conventions: it is used when
// $HADOOP_CONF_DIR's core-site.xml sets hadoop.http.authentication.type
// (else hadoop.security.authentication) to kerberos, or, with neither set,
// when KRB5CCNAME or KRB5_CONFIG is; the ticket comes from login's keytab
// (what it leaves empty from STATEUTIL_KEYTAB and STATEUTIL_PRINCIPAL), else
// the credential cache, and the service principal is hadoop.http.authentication.kerberos.principal
// with _HOST the ResourceManager's host, else HTTP/<host>.
func NewClient(rm string, login kerberos.Login) (*Client, error) {
	u, err := url.Parse(rm)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: ResourceManager address %q: want http://host:port", ErrYARN, rm)
	}
	conf, err := hadoopconf.LoadFromEnvironment()
	if err != nil {
		return nil, fmt.Errorf("%w: reading Hadoop configuration: %w", ErrYARN, err)
	}
	c := &Client{RM: strings.TrimRight(rm, "/"), User: os.Getenv("HADOOP_USER_NAME")}
	if c.User == "" {
		if cur, err := user.Current(); err == nil {
			c.User = cur.Username
		}
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	c.do = hc.Do
	if kerberos.Wanted(cmpOr(conf["hadoop.http.authentication.type"], conf["hadoop.security.authentication"])) {
		kc, err := kerberos.Client(login.WithEnvironment())
		if err != nil {
			return nil, fmt.Errorf("%w: kerberos for %s: %w", ErrYARN, rm, err)
		}
		c.SPN = kerberos.ServicePrincipal(conf["hadoop.http.authentication.kerberos.principal"], "HTTP", u.Hostname())
		c.do = spnego.NewClient(kc, hc, c.SPN).Do
		c.User = ""
	}
	return c, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// call sends one request and decodes a JSON answer into out (if not nil).
func (c *Client) call(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := c.RM + path
	if c.User != "" {
		u += "?user.name=" + url.QueryEscape(c.User)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.do(req)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrYARN, method, c.RM+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrYARN, method, c.RM+path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: %s %s: %s: %s", ErrYARN, method, c.RM+path, resp.Status, remoteMessage(data))
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s %s: answer is not the JSON expected: %w (%.200s)", ErrYARN, method, c.RM+path, err, data)
	}
	return nil
}

// remoteMessage is the message of a ResourceManager error document
// ({"RemoteException": {"message": ...}}), else the body's start.
func remoteMessage(data []byte) string {
	var e struct {
		RemoteException struct {
			Exception, Message string
		}
	}
	if json.Unmarshal(data, &e) == nil && e.RemoteException.Message != "" {
		return e.RemoteException.Exception + ": " + e.RemoteException.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// NewApplication asks for an application id.
func (c *Client) NewApplication(ctx context.Context) (string, error) {
	var out map[string]json.RawMessage
	if err := c.call(ctx, http.MethodPost, "/ws/v1/cluster/apps/new-application", nil, &out); err != nil {
		return "", err
	}
	for _, k := range []string{"application-id", "applicationId"} {
		if raw, ok := out[k]; ok {
			var id string
			if err := json.Unmarshal(raw, &id); err != nil || id == "" {
				break
			}
			c.beans = k == "applicationId"
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: new-application answered without an application id (keys %v)", ErrYARN, slices.Sorted(maps.Keys(out)))
}

// LocalResource is a file YARN copies into a container's directory.
type LocalResource struct {
	// URL is where the file is (hdfs://...); Size and Timestamp must be
	// the file's length and modification time in milliseconds there.
	URL       string
	Size      int64
	Timestamp int64
}

// Submission is an application to submit.
type Submission struct {
	ID, Name, Queue, Type string
	// Command starts the ApplicationMaster; Env is its environment and
	// Resources the files it gets, by name.
	Command   string
	Env       map[string]string
	Resources map[string]LocalResource
	// MemoryMB and VCores are the ApplicationMaster container's size.
	MemoryMB, VCores int
	MaxAttempts      int
	// Tokens go into the ApplicationMaster's credentials, each under its
	// service as its alias: what the ResourceManager renews and the
	// NodeManager writes to the container's HADOOP_TOKEN_FILE_LOCATION.
	Tokens []hdfs.Token
}

// Submit submits s (its ID from NewApplication).
func (c *Client) Submit(ctx context.Context, s Submission) error {
	var body any
	if c.beans {
		body = beanSubmission(s)
	} else {
		body = documentedSubmission(s)
	}
	return c.call(ctx, http.MethodPost, "/ws/v1/cluster/apps", body, nil)
}

func documentedSubmission(s Submission) map[string]any {
	type entry struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	var res, env, tokens []entry
	for _, k := range slices.Sorted(maps.Keys(s.Resources)) {
		r := s.Resources[k]
		res = append(res, entry{k, map[string]any{"resource": r.URL, "type": "FILE", "visibility": "APPLICATION", "size": r.Size, "timestamp": r.Timestamp}})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, entry{k, s.Env[k]})
	}
	for _, t := range s.Tokens {
		tokens = append(tokens, entry{t.Service, t.URLString()})
	}
	spec := map[string]any{
		"local-resources": map[string]any{"entry": res},
		"environment":     map[string]any{"entry": env},
		"commands":        map[string]any{"command": s.Command},
	}
	if len(tokens) > 0 {
		spec["credentials"] = map[string]any{"tokens": map[string]any{"entry": tokens}}
	}
	return map[string]any{
		"application-id": s.ID, "application-name": s.Name, "queue": s.Queue, "application-type": s.Type,
		"am-container-spec": spec,
		"unmanaged-AM":      false, "max-app-attempts": s.MaxAttempts,
		"resource": map[string]any{"memory": s.MemoryMB, "vCores": s.VCores},
		"keep-containers-across-application-attempts": false,
	}
}

func beanSubmission(s Submission) map[string]any {
	res := map[string]any{}
	for k, r := range s.Resources {
		res[k] = map[string]any{"url": r.URL, "type": "FILE", "visibility": "APPLICATION", "size": r.Size, "timestamp": r.Timestamp}
	}
	spec := map[string]any{"resources": res, "environment": s.Env, "commands": []string{s.Command}}
	if len(s.Tokens) > 0 {
		tokens := map[string]string{}
		for _, t := range s.Tokens {
			tokens[t.Service] = t.URLString()
		}
		spec["credentials"] = map[string]any{"tokens": tokens}
	}
	return map[string]any{
		"applicationId": s.ID, "applicationName": s.Name, "queue": s.Queue, "applicationType": s.Type,
		"containerLaunchContextInfo": spec,
		"unmanagedAM":                false, "maxAppAttempts": s.MaxAttempts,
		"resource": map[string]any{"memory": s.MemoryMB, "vCores": s.VCores},
		"keepContainersAcrossApplicationAttempts": false,
	}
}

// App is what the ResourceManager reports of an application.
type App struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	FinalStatus string `json:"finalStatus"`
	Diagnostics string `json:"diagnostics"`
	// AMContainerLogs is the ApplicationMaster's log page on its node.
	AMContainerLogs string `json:"amContainerLogs"`
	TrackingURL     string `json:"trackingUrl"`
}

// Done reports whether the application has ended.
func (a *App) Done() bool {
	return a.State == "FINISHED" || a.State == "FAILED" || a.State == "KILLED"
}

// Succeeded reports whether it ended well.
func (a *App) Succeeded() bool { return a.State == "FINISHED" && a.FinalStatus == "SUCCEEDED" }

// state asks for an application's state and diagnostics.
func (c *Client) state(ctx context.Context, id string) (string, string, error) {
	var out struct {
		State       string  `json:"state"`
		Diagnostics *string `json:"diagnostics"`
	}
	if err := c.call(ctx, http.MethodGet, "/ws/v1/cluster/apps/"+url.PathEscape(id)+"/state", nil, &out); err != nil {
		return "", "", err
	}
	var diag string
	if out.Diagnostics != nil {
		diag = *out.Diagnostics
	}
	return out.State, diag, nil
}

// Report asks for an application's report.
func (c *Client) Report(ctx context.Context, id string) (*App, error) {
	var out struct {
		App App `json:"app"`
	}
	if err := c.call(ctx, http.MethodGet, "/ws/v1/cluster/apps/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out.App, nil
}

// Kill asks the ResourceManager to kill an application.
func (c *Client) Kill(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPut, "/ws/v1/cluster/apps/"+url.PathEscape(id)+"/state", map[string]string{"state": "KILLED"}, nil)
}

// Wait polls the application's state every poll until it has ended, and
// returns its report; ctx bounds the wait. A ResourceManager that cannot
// render the report (the minicluster's bean-based JSON fails on it) gives
// a report of the state and its diagnostics alone.
func (c *Client) Wait(ctx context.Context, id string, poll time.Duration) (*App, error) {
	for {
		state, diag, err := c.state(ctx, id)
		if err != nil {
			return nil, err
		}
		switch state {
		case "FINISHED", "FAILED", "KILLED":
			if app, err := c.Report(ctx, id); err == nil {
				return app, nil
			}
			return &App{ID: id, State: state, Diagnostics: diag}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s (state %s): %w", id, state, ctx.Err())
		case <-time.After(poll):
		}
	}
}
