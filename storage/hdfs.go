package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/stateutil/stateutil/internal/kerberos"
)

// HDFS client tuning. Variables so tests and callers with unusual clusters
// can adjust them before the first Resolve.
var (
	// HDFSDialTimeout bounds connecting to a namenode or datanode, so a
	// namenode that is down fails fast instead of hanging.
	HDFSDialTimeout = 5 * time.Second
	// HDFSIOTimeout bounds each network read or write once connected, so a
	// hung namenode or datanode surfaces as ErrUnavailable.
	HDFSIOTimeout = 60 * time.Second
)

const hdfsDefaultPort = "8020"

// HDFSOptions are what the command line says about HDFS.
type HDFSOptions struct {
	// Kerberos is the keytab login on a kerberized cluster; what it leaves
	// empty comes from STATEUTIL_KEYTAB and STATEUTIL_PRINCIPAL, and without
	// a keytab the ticket comes from the credential cache.
	Kerberos kerberos.Login
}

// HDFSOpener is the Opener of hdfs:// URIs (hdfs://namenode:port/path,
// hdfs://NAMESERVICE/path for a nameservice of HADOOP_CONF_DIR, or
// hdfs:///path for its fs.defaultFS) with o as it is when a location is
// resolved (nil: no options).
func HDFSOpener(o *HDFSOptions) Opener {
	return func(ctx context.Context, u *url.URL) (Storage, error) {
		var login kerberos.Login
		if o != nil {
			login = o.Kerberos
		}
		return openHDFS(ctx, u, login, tokenFile(login.WithEnvironment().Keytab))
	}
}

type hdfsStorage struct {
	client *hdfs.Client
	prefix string // "hdfs://host:port" as the user wrote it, for URI and errors
	// tokenService names the namenodes in a delegation token.
	tokenService string
}

var (
	hdfsClientsMu sync.Mutex
	// Storage has no Close, so clients are shared per namenode and user
	// rather than leaking one connection (and lease goroutine) per Resolve.
	hdfsClients = map[string]*hdfs.Client{}
)

// openHDFS connects to the namenodes named by u (or, for hdfs:///path, by
// fs.defaultFS in HADOOP_CONF_DIR) and checks that one answers.
// With tokens, a credentials file, its delegation token logs in.
func openHDFS(ctx context.Context, u *url.URL, login kerberos.Login, tokens string) (Storage, error) {
	prefix := "hdfs://" + u.Host
	fail := func(kind error, format string, a ...any) error {
		return fmt.Errorf("connect %s: %w: %s", prefix+"/", kind, fmt.Sprintf(format, a...))
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(ErrUnavailable, "%v", err)
	}

	conf, err := hadoopconf.LoadFromEnvironment()
	if err != nil {
		return nil, fmt.Errorf("connect %s: reading Hadoop configuration: %w", prefix+"/", err)
	}
	opts := hdfs.ClientOptionsFromConf(conf)
	authority := u.Host
	if authority == "" {
		d, err := url.Parse(conf["fs.defaultFS"])
		if err != nil || d.Scheme != "hdfs" || d.Host == "" {
			return nil, fmt.Errorf("%s names no namenode and no hdfs:// fs.defaultFS was found (HADOOP_CONF_DIR=%q)", u.String(), os.Getenv("HADOOP_CONF_DIR"))
		}
		authority = d.Host
	}
	if opts.Addresses, err = hdfsNamenodes(conf, authority); err != nil {
		return nil, fmt.Errorf("connect %s: %w", prefix+"/", err)
	}

	login = login.WithEnvironment()
	kerberized := hdfsKerberized(conf, login)
	// The delegation token of a credentials file (YARN gives each
	// container one) for this namenode stands in for any other login, as
	// in Hadoop's clients. A file without one leaves the login as it was:
	// YARN's files hold only YARN's tokens on an open cluster.
	service := hdfsTokenService(conf, authority, opts.Addresses)
	var noToken error
	if tokens != "" {
		var err error
		if opts.DelegationToken, noToken, err = hdfsDelegationToken(tokens, service); err != nil {
			return nil, fmt.Errorf("connect %s: %w: %w", prefix+"/", ErrPermission, err)
		}
	}
	var who string
	if opts.DelegationToken != nil {
		opts.KerberosClient = nil
		who = "token|" + tokens
	} else if kerberized {
		// dfs.namenode.kerberos.principal (without its realm) is already in
		// opts; the library puts each namenode's canonical name in for _HOST.
		if opts.KerberosServicePrincipleName == "" {
			opts.KerberosServicePrincipleName = "nn/_HOST"
		}
		// Per source of the identity and KDC: another keytab, principal,
		// cache or krb5.conf is another login.
		who = strings.Join([]string{"krb", login.Keytab, login.Principal, os.Getenv("KRB5CCNAME"), os.Getenv("KRB5_CONFIG")}, "|")
	} else {
		opts.KerberosClient = nil
		opts.User = os.Getenv("HADOOP_USER_NAME")
		if opts.User == "" {
			cur, err := user.Current()
			if err != nil {
				return nil, fail(ErrPermission, "no HADOOP_USER_NAME and no OS user: %v", err)
			}
			opts.User = cur.Username
		}
		who = opts.User
	}
	// What the configuration says of the wire is part of the client too.
	key := fmt.Sprintf("%v|%s|%s|%s|%v", opts.Addresses, who, opts.KerberosServicePrincipleName,
		opts.DataTransferProtection, opts.UseDatanodeHostname)
	hdfsClientsMu.Lock()
	defer hdfsClientsMu.Unlock()
	if c, ok := hdfsClients[key]; ok {
		return &hdfsStorage{client: c, prefix: prefix, tokenService: service}, nil
	}

	if kerberized && opts.DelegationToken == nil {
		// Once per client: a keytab login asks the KDC, which a command
		// resolving every file of a snapshot must not do for each.
		kc, err := kerberos.Client(login)
		if err != nil && noToken != nil {
			// Where a token was looked for, its absence is the cause to tell.
			return nil, fmt.Errorf("connect %s: %w: %w; nor a Kerberos login: %v", prefix+"/", ErrPermission, noToken, err)
		}
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w: kerberos: %w", prefix+"/", ErrPermission, err)
		}
		opts.KerberosClient = kc
	}
	dialer := &net.Dialer{Timeout: HDFSDialTimeout, KeepAlive: 30 * time.Second}
	opts.NamenodeDialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &timeoutConn{Conn: c, timeout: HDFSIOTimeout}, nil
	}
	opts.DatanodeDialFunc = dialer.DialContext

	connectErr := func(err error) error {
		if opts.DelegationToken != nil && tokenRefused(err) {
			return tokenRefusedErr(prefix, tokens, opts.DelegationToken, err)
		}
		return hdfsConnectErr(prefix, err)
	}
	c, err := hdfs.NewClient(opts)
	if err != nil {
		return nil, connectErr(err)
	}
	// NewClient only writes the handshake; a real round trip proves the
	// namenode is up (and caches the defaults Create needs).
	if _, err := c.ServerDefaults(); err != nil {
		c.Close()
		return nil, connectErr(err)
	}
	hdfsClients[key] = c
	return &hdfsStorage{client: c, prefix: prefix, tokenService: service}, nil
}

// hdfsNamenodes is where the namenodes of authority listen: those of
// dfs.ha.namenodes.NS (or the one of dfs.namenode.rpc-address.NS) for a
// nameservice NS of dfs.nameservices, else authority itself, on the default
// port if it names none. The client tries them in this order.
func hdfsNamenodes(conf hadoopconf.HadoopConf, authority string) ([]string, error) {
	if !slices.Contains(confList(conf["dfs.nameservices"]), authority) {
		if _, _, err := net.SplitHostPort(authority); err != nil {
			return []string{net.JoinHostPort(authority, hdfsDefaultPort)}, nil
		}
		return []string{authority}, nil
	}
	key := "dfs.namenode.rpc-address." + authority
	ids := confList(conf["dfs.ha.namenodes."+authority])
	if len(ids) == 0 {
		if conf[key] == "" {
			return nil, fmt.Errorf("nameservice %s has neither dfs.ha.namenodes.%[1]s nor %s in HADOOP_CONF_DIR", authority, key)
		}
		return []string{conf[key]}, nil
	}
	addrs := make([]string, len(ids))
	for i, id := range ids {
		if addrs[i] = conf[key+"."+id]; addrs[i] == "" {
			return nil, fmt.Errorf("nameservice %s: namenode %s has no %s.%[2]s in HADOOP_CONF_DIR", authority, id, key)
		}
	}
	return addrs, nil
}

// confList splits a comma-separated Hadoop setting, as Hadoop trims it.
func confList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func hdfsConnectErr(prefix string, err error) error {
	if krbErr, ok := kerberos.Classify(err); ok {
		return fmt.Errorf("connect %s: %w: kerberos: %w", prefix+"/", ErrPermission, krbErr)
	}
	kind := hdfsKind(err)
	if kind == nil {
		kind = ErrUnavailable
	}
	return fmt.Errorf("connect %s: %w: %w", prefix+"/", kind, err)
}

// timeoutConn gives every namenode read and write a deadline. After a
// failure it closes itself: the RPC stream is then out of step, and a closed
// conn makes the library reconnect instead of reading a stale reply.
type timeoutConn struct {
	net.Conn
	timeout time.Duration
}

func (c *timeoutConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Read(b)
	if err != nil {
		c.Conn.Close()
	}
	return n, err
}

func (c *timeoutConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Write(b)
	if err != nil {
		c.Conn.Close()
	}
	return n, err
}

// Java exception classes the namenode reports, mapped onto our sentinels.
var hdfsExceptions = map[string]error{
	"java.io.FileNotFoundException":                            ErrNotFound,
	"org.apache.hadoop.security.AccessControlException":        ErrPermission,
	"org.apache.hadoop.fs.FileAlreadyExistsException":          ErrExist,
	"org.apache.hadoop.hdfs.server.namenode.SafeModeException": ErrUnavailable,
	"org.apache.hadoop.ipc.RetriableException":                 ErrUnavailable,
	"org.apache.hadoop.ipc.StandbyException":                   ErrUnavailable,
}

// hdfsKind classifies an error from the HDFS client; nil if none fits.
func hdfsKind(err error) error {
	var remote hdfs.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	case errors.Is(err, fs.ErrExist):
		return ErrExist
	case errors.As(err, &remote) && hdfsExceptions[remote.Exception()] != nil:
		return hdfsExceptions[remote.Exception()]
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return ErrUnavailable
	}
	// The library flattens these with %s, so only the text is left.
	msg := err.Error()
	for _, s := range []string{"no available namenodes", "no available datanodes", "Ack error from datanode", "write failed:", "read failed:", "invalid response from datanode"} {
		if strings.Contains(msg, s) {
			return ErrUnavailable
		}
	}
	return nil
}

// wrap turns a client error into one error naming op and the URI, wrapping
// the matching sentinel. io.EOF passes through untouched.
func (s *hdfsStorage) wrap(op, p string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	// The library's PathError repeats the bare path; the URI replaces it.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err == io.EOF {
		// A datanode hanging up mid-transfer, not the end of a file.
		err = io.ErrUnexpectedEOF
	}
	var remote hdfs.Error
	if errors.As(err, &remote) && remote.Message() != "" {
		// Keep the Java message's first line; the class name alone says little.
		first, _, _ := strings.Cut(remote.Message(), "\n")
		err = fmt.Errorf("%w: %s", err, first)
	}
	switch kind := hdfsKind(err); {
	case kind == ErrPermission:
		// The library drops the namenode's message; who we were is the
		// useful part.
		return fmt.Errorf("%s %s: %w for HDFS user %q", op, s.URI(p), kind, s.client.User())
	case kind != nil && err.Error() == kind.Error():
		return fmt.Errorf("%s %s: %w", op, s.URI(p), kind)
	case kind != nil:
		return fmt.Errorf("%s %s: %w: %w", op, s.URI(p), kind, err)
	}
	return fmt.Errorf("%s %s: %w", op, s.URI(p), err)
}

func (s *hdfsStorage) URI(p string) string { return s.prefix + p }

type hdfsFile struct {
	s    *hdfsStorage
	path string
	r    *hdfs.FileReader

	mu  sync.Mutex
	pos int64 // offset of the next Read; ReadAt leaves it alone
	at  int64 // offset the library's reader is positioned at
}

func (s *hdfsStorage) Open(ctx context.Context, p string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("open", p, err)
	}
	r, err := s.client.Open(p)
	if err != nil {
		return nil, s.wrap("open", p, err)
	}
	if r.Stat().IsDir() {
		r.Close()
		return nil, fmt.Errorf("open %s: is a directory, expected a file", s.URI(p))
	}
	return &hdfsFile{s: s, path: p, r: r}, nil
}

// CRC32C composes the file's CRC32C from its blocks' (see
// hdfs.FileReader.BlockCRCs): two namenode calls and one datanode call a
// block, whatever the file's size.
func (s *hdfsStorage) CRC32C(ctx context.Context, p string) (int64, uint32, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, s.wrap("checksum", p, err)
	}
	r, err := s.client.Open(p)
	if err != nil {
		return 0, 0, s.wrap("checksum", p, err)
	}
	defer r.Close()
	r.SetDeadline(time.Now().Add(HDFSIOTimeout))
	blocks, err := r.BlockCRCs()
	if err != nil {
		return 0, 0, s.wrap("checksum", p, err)
	}
	var n int64
	var crc uint32
	for _, b := range blocks {
		if !b.CRC32C {
			return 0, 0, fmt.Errorf("checksum %s: %w: its blocks carry CRC32, not CRC32C", s.URI(p), errors.ErrUnsupported)
		}
		crc = crc32cCombine(crc, b.CRC, b.Length)
		n += b.Length
	}
	if n != r.Stat().Size() {
		return 0, 0, fmt.Errorf("checksum %s: %w: its blocks hold %d bytes of its %d", s.URI(p), ErrUnavailable, n, r.Stat().Size())
	}
	return n, crc, nil
}

func (f *hdfsFile) Size() int64  { return f.r.Stat().Size() }
func (f *hdfsFile) Name() string { return f.s.URI(f.path) }
func (f *hdfsFile) Close() error { return f.s.wrap("close", f.path, f.r.Close()) }

// seek moves the library's reader, which owns a single offset shared by
// Read and ReadAt.
func (f *hdfsFile) seek(off int64) error {
	if off == f.at {
		return nil
	}
	if _, err := f.r.Seek(off, io.SeekStart); err != nil {
		return err
	}
	f.at = off
	return nil
}

func (f *hdfsFile) deadline() {
	f.r.SetDeadline(time.Now().Add(HDFSIOTimeout))
}

func (f *hdfsFile) Read(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pos >= f.Size() {
		return 0, io.EOF
	}
	if err := f.seek(f.pos); err != nil {
		return 0, f.s.wrap("read", f.path, err)
	}
	f.deadline()
	n, err := f.r.Read(b)
	f.pos += int64(n)
	f.at += int64(n)
	if err != nil && err != io.EOF {
		f.at = -1 // unknown after a failure: seek before the next read
	}
	return n, f.s.wrap("read", f.path, err)
}

func (f *hdfsFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", f.Name(), off)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= f.Size() {
		return 0, io.EOF
	}
	if err := f.seek(off); err != nil {
		return 0, f.s.wrap("read", f.path, err)
	}
	f.deadline()
	n, err := io.ReadFull(f.r, b)
	f.at += int64(n)
	switch {
	case err == io.ErrUnexpectedEOF && off+int64(n) == f.Size():
		// A short read at the end of the file is io.EOF, as io.ReaderAt says.
		err = io.EOF
	case err == io.EOF && n == 0 && len(b) > 0:
		err = io.ErrUnexpectedEOF // the file claimed more bytes than it gave
		f.at = -1
	case err != nil:
		f.at = -1
	}
	return n, f.s.wrap("read", f.path, err)
}

type hdfsPending struct {
	s    *hdfsStorage
	path string
	tmp  string
	w    *hdfs.FileWriter
	done bool
}

func (s *hdfsStorage) Create(ctx context.Context, p string) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("create", p, err)
	}
	dir, base := path.Split(p)
	var rnd [8]byte
	rand.Read(rnd[:])
	// Same directory, so Commit is a rename within one namespace; a dot name
	// keeps half-written files out of the way of tools that skip hidden ones.
	tmp := dir + TempPrefix + "tmp-" + hex.EncodeToString(rnd[:]) + "-" + base
	w, err := s.client.Create(tmp)
	if err != nil {
		return nil, s.wrap("create", p, err)
	}
	return &hdfsPending{s: s, path: p, tmp: tmp, w: w}, nil
}

func (p *hdfsPending) Write(b []byte) (int, error) {
	if p.done {
		return 0, fmt.Errorf("write %s: already committed or aborted", p.s.URI(p.path))
	}
	if len(b) == 0 {
		// The library would allocate a block for nothing, and the namenode
		// then waits forever for that empty block to be reported.
		return 0, nil
	}
	p.w.SetDeadline(time.Now().Add(HDFSIOTimeout))
	n, err := p.w.Write(b)
	return n, p.s.wrap("write", p.path, err)
}

func (p *hdfsPending) Commit() error {
	if p.done {
		return fmt.Errorf("commit %s: already committed or aborted", p.s.URI(p.path))
	}
	p.done = true
	if err := p.close(); err != nil {
		p.s.client.Remove(p.tmp)
		return p.s.wrap("commit", p.path, err)
	}
	// rename2 with OVERWRITE: readers see the old file or the new one.
	if err := p.s.client.Rename(p.tmp, p.path); err != nil {
		p.s.client.Remove(p.tmp)
		return p.s.wrap("commit", p.path, err)
	}
	return nil
}

// close flushes the data and completes the file. The namenode may answer
// "not yet" until the datanode reports the last block; the Java client
// retries with backoff, and so do we.
func (p *hdfsPending) close() error {
	wait := 50 * time.Millisecond
	deadline := time.Now().Add(HDFSIOTimeout)
	for {
		p.w.SetDeadline(time.Now().Add(HDFSIOTimeout))
		err := p.w.Close()
		if err == nil || !hdfs.IsErrReplicating(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the namenode did not see the last block replicated within %v", ErrUnavailable, HDFSIOTimeout)
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func (p *hdfsPending) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	// Close ends the library's pipeline to the datanode; its error does not
	// matter, the file goes anyway. Deleting also releases the lease.
	p.w.SetDeadline(time.Now().Add(HDFSIOTimeout))
	p.w.Close()
	if err := p.s.client.Remove(p.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p.s.wrap("abort", p.path, err)
	}
	return nil
}

func hdfsInfo(p string, fi fs.FileInfo) Info {
	size := fi.Size()
	if fi.IsDir() {
		size = 0
	}
	return Info{Name: fi.Name(), Path: p, Size: size, IsDir: fi.IsDir(), ModTime: fi.ModTime()}
}

func (s *hdfsStorage) Stat(ctx context.Context, p string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, s.wrap("stat", p, err)
	}
	fi, err := s.client.Stat(p)
	if err != nil {
		return Info{}, s.wrap("stat", p, err)
	}
	return hdfsInfo(p, fi), nil
}

func (s *hdfsStorage) List(ctx context.Context, p string) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("list", p, err)
	}
	// HDFS lists a file as itself; callers expect a directory.
	fi, err := s.client.Stat(p)
	if err != nil {
		return nil, s.wrap("list", p, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("list %s: not a directory", s.URI(p))
	}
	entries, err := s.client.ReadDir(p)
	if err != nil {
		return nil, s.wrap("list", p, err)
	}
	out := make([]Info, 0, len(entries))
	for _, e := range entries {
		out = append(out, hdfsInfo(path.Join(p, e.Name()), e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *hdfsStorage) MkdirAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return s.wrap("mkdir", p, err)
	}
	return s.wrap("mkdir", p, s.client.MkdirAll(p, 0o755))
}

func (s *hdfsStorage) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return s.wrap("remove", p, err)
	}
	return s.wrap("remove", p, s.client.Remove(p))
}

func (s *hdfsStorage) RemoveAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return s.wrap("remove", p, err)
	}
	return s.wrap("remove", p, s.client.RemoveAll(p))
}

func (s *hdfsStorage) Rename(ctx context.Context, oldpath, newpath string) error {
	if err := ctx.Err(); err != nil {
		return s.wrap("rename", oldpath, err)
	}
	// The library always renames with OVERWRITE; refuse an existing target
	// first. Two racing renames to one new name can still both pass this.
	if _, err := s.client.Stat(newpath); err == nil {
		return fmt.Errorf("rename %s to %s: %w", s.URI(oldpath), s.URI(newpath), ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s.wrap("rename", newpath, err)
	}
	if err := s.client.Rename(oldpath, newpath); err != nil {
		return s.wrap("rename", oldpath, err)
	}
	return nil
}

// Claim on HDFS is a file beside p, created exclusively and held open:
// the namenode's lease on an open file is the claim, renewed by the client
// while this process lives. A killed holder leaves the file; once its
// lease has expired (the namenode's soft limit, a minute by default),
// appending to it takes it over.
func (s *hdfsStorage) Claim(ctx context.Context, p string) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("claim", p, err)
	}
	name := claimName(p)
	key := s.URI(name)
	if !processClaims.take(key) {
		return nil, fmt.Errorf("%s: %w (by this process)", s.URI(p), ErrInUse)
	}
	if err := s.client.MkdirAll(path.Dir(name), 0o755); err != nil {
		processClaims.drop(key)
		return nil, s.wrap("claim", p, err)
	}
	w, err := s.client.Create(name)
	if errors.Is(err, fs.ErrExist) {
		w, err = s.client.Append(name)
	}
	if err != nil {
		processClaims.drop(key)
		var remote hdfs.Error
		if errors.As(err, &remote) && (strings.HasSuffix(remote.Exception(), "AlreadyBeingCreatedException") ||
			strings.HasSuffix(remote.Exception(), "RecoveryInProgressException")) {
			return nil, fmt.Errorf("%s: %w (the claim %s is held, or was by a writer that stopped less than a minute ago)", s.URI(p), ErrInUse, key)
		}
		return nil, s.wrap("claim", p, err)
	}
	return &hdfsClaim{s: s, name: name, key: key, w: w}, nil
}

type hdfsClaim struct {
	s    *hdfsStorage
	name string
	key  string
	w    *hdfs.FileWriter
	once sync.Once
	err  error
}

func (c *hdfsClaim) Release() error {
	c.once.Do(func() {
		defer processClaims.drop(c.key)
		c.w.SetDeadline(time.Now().Add(HDFSIOTimeout))
		_ = c.w.Close()
		if err := c.s.client.Remove(c.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.err = c.s.wrap("release claim", c.name, err)
		}
	})
	return c.err
}
