// Package azure is storage on Azure Blob Storage and Data Lake Storage
// Gen2, in the location forms Flink (Hadoop's ABFS and WASB) writes:
// abfs[s]://container@account.dfs.core.windows.net/path and
// wasb[s]://container@account.blob.core.windows.net/path, both reached
// through the account's Blob endpoint (https://account.blob.<suffix>).
//
// Credentials, for an account, are the first of: the account key or SAS
// of AZURE_STORAGE_CONNECTION_STRING when it names that account (its
// BlobEndpoint too); AZURE_STORAGE_KEY (a shared key, when
// AZURE_STORAGE_ACCOUNT is unset or names the account);
// AZURE_STORAGE_SAS_TOKEN; and otherwise the environment's credential
// chain (azidentity's DefaultAzureCredential: a service principal's
// variables, workload identity, managed identity, the Azure CLI's login).
// Options.Endpoint or STATEUTIL_AZURE_ENDPOINT names another Blob endpoint
// (Azurite's http://127.0.0.1:10000/devstoreaccount1).
//
// Directories are name prefixes, with a zero-byte marker blob named as the
// directory and carrying the metadata hdi_isfolder=true for an empty one,
// as Hadoop's WASB writes them and Data Lake Storage shows its
// directories. Large files go up as blocks, staged while the caller
// writes and committed in one request; claims are created with
// If-None-Match: * and refreshed and released on the ETag last written
// (see objstore).
package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// Schemes are the URI schemes served: Hadoop's ABFS (Data Lake Storage
// Gen2) and WASB (Blob Storage) spellings, all the same blobs.
var Schemes = []string{"abfs", "abfss", "wasb", "wasbs"}

// Tuning. Variables so that tests and callers with unusual stores can
// adjust them before the first Resolve.
var (
	// BlockSize is the size of the blocks a large file goes up in.
	BlockSize = 8 << 20
	// Uploads bounds the blocks in flight per account, across all files
	// being written: with the file buffers, what bounds memory.
	Uploads = 10
)

// Options are the settings that do not come from the environment.
// Register reads them when a location is resolved, so flags may fill them
// in after the registry is built.
type Options struct {
	// Endpoint is the Blob service URL of the account
	// (https://account.blob.core.windows.net by default).
	Endpoint string
}

// Register makes every scheme of Schemes resolve to Azure with o.
func Register(r *storage.Registry, o *Options) {
	for _, scheme := range Schemes {
		r.Register(scheme, Opener(o))
	}
}

// Opener returns the storage.Opener of scheme://container@account.host/path.
func Opener(o *Options) storage.Opener {
	return func(ctx context.Context, u *url.URL) (storage.Storage, error) {
		want := fmt.Sprintf("%s://container@account.%s.core.windows.net/path", u.Scheme, map[bool]string{true: "dfs", false: "blob"}[strings.HasPrefix(u.Scheme, "abfs")])
		account, suffix, ok := splitHost(u.Hostname())
		if u.User == nil || u.User.Username() == "" || !ok || u.Port() != "" {
			return nil, fmt.Errorf("%q is not an Azure location (want %s)", u.String(), want)
		}
		var opts Options
		if o != nil {
			opts = *o
		}
		c, err := client(ctx, account, suffix, opts)
		if err != nil {
			return nil, fmt.Errorf("connect %s://%s@%s/: %w", u.Scheme, u.User.Username(), u.Host, err)
		}
		return c.store(u.Scheme, u.User.Username(), u.Host)
	}
}

// splitHost splits account.dfs.core.windows.net (or .blob., or another
// cloud's suffix) into the account and the suffix after the service.
func splitHost(host string) (account, suffix string, ok bool) {
	parts := strings.SplitN(host, ".", 3)
	if len(parts) != 3 || parts[0] == "" || (parts[1] != "dfs" && parts[1] != "blob") || parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// conn is one account's client and what its stores share.
type conn struct {
	endpoint  string // the Blob service URL, for messages
	shown     string
	newClient func(containerURL string) (*container.Client, error)
	uploads   chan struct{}
	mu        sync.Mutex
	dirs      map[string]*objstore.Dirs // by container
	slots     chan struct{}
}

var (
	connsMu sync.Mutex
	// Storage has no Close: clients are shared per account and
	// configuration rather than one connection pool per Resolve.
	conns = map[string]*conn{}
)

// client returns the shared client of account.
func client(ctx context.Context, account, suffix string, o Options) (*conn, error) {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AZURE_") || strings.HasPrefix(kv, "STATEUTIL_AZURE_") || strings.HasPrefix(kv, "IDENTITY_") {
			env = append(env, kv)
		}
	}
	k := strings.Join(append([]string{account, suffix, o.Endpoint}, env...), "\x00")
	connsMu.Lock()
	defer connsMu.Unlock()
	if c, ok := conns[k]; ok {
		return c, nil
	}
	creds, err := credentialsFor(account, suffix, o)
	if err != nil {
		return nil, err
	}
	copts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: objstore.Transport()},
		// A store that is down is the caller's to hear of in seconds.
		Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: 2 * time.Second},
	}}
	c := &conn{endpoint: creds.endpoint, shown: creds.endpoint, uploads: make(chan struct{}, max(1, Uploads)), dirs: map[string]*objstore.Dirs{}, slots: objstore.NewSlots()}
	switch {
	case creds.key != nil:
		c.newClient = func(u string) (*container.Client, error) {
			return container.NewClientWithSharedKeyCredential(u, creds.key, copts)
		}
	case creds.sas != "":
		c.newClient = func(u string) (*container.Client, error) {
			return container.NewClientWithNoCredential(u+"?"+strings.TrimPrefix(creds.sas, "?"), copts)
		}
	default:
		cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: copts.ClientOptions})
		if err != nil {
			return nil, fmt.Errorf("%w: no Azure credentials: %v", storage.ErrPermission, err)
		}
		c.newClient = func(u string) (*container.Client, error) { return container.NewClient(u, cred, copts) }
	}
	conns[k] = c
	return c, nil
}

func (c *conn) store(scheme, name, host string) (storage.Storage, error) {
	api, err := c.newClient(strings.TrimSuffix(c.endpoint, "/") + "/" + url.PathEscape(name))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.dirs[name]
	if !ok {
		d = objstore.NewDirs()
		c.dirs[name] = d
	}
	b := &containerOf{c: c, api: api, name: name, prefix: scheme + "://" + name + "@" + host + "/"}
	return objstore.New(b, objstore.Options{Dirs: d, Slots: c.slots, ClaimTTLVar: "STATEUTIL_AZURE_CLAIM_TTL"}), nil
}
