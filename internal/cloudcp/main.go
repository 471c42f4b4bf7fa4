// Command cloudcp is the baseline scripts/cloud-bench.sh measures
// stateutil's transfers to Google Cloud Storage and Azure against: a
// recursive copy of a directory's files up to a location and back down,
// as the official SDKs' own samples make it, eight files at a time. On
// GCS each file is one storage.Writer (resumable, the default chunk size)
// or Reader; on Azure the SDK's UploadFile and DownloadFile (blocks in
// parallel, its default concurrency). The client is configured from the
// environment as the emulators' env files set it: STORAGE_EMULATOR_HOST,
// AZURE_STORAGE_CONNECTION_STRING.
//
//	cloudcp up DIR gs://bucket/prefix | abfss://container@account.dfs.core.windows.net/prefix
//	cloudcp down LOCATION DIR
//	cloudcp rm LOCATION          removes everything below LOCATION (between rounds, untimed)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"

	"path/filepath"
	"strings"
	"sync"

	gcs "cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"google.golang.org/api/iterator"
)

// store is the one location of a copy: its files' names relative to it.
type store interface {
	put(ctx context.Context, name, file string) error
	get(ctx context.Context, name, file string) error
	remove(ctx context.Context, name string) error
	list(ctx context.Context) ([]string, error)
}

func main() {
	args := os.Args[1:]
	if len(args) == 2 && args[0] == "rm" {
		args = append(args, "")
	}
	if len(args) != 3 || (args[0] != "up" && args[0] != "down" && args[0] != "rm") {
		fmt.Fprintln(os.Stderr, "usage: cloudcp up DIR LOCATION | cloudcp down LOCATION DIR | cloudcp rm LOCATION")
		os.Exit(2)
	}
	if err := run(context.Background(), args[0], args[1], args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "cloudcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, from, to string) error {
	loc, local := to, from
	if dir != "up" {
		loc, local = from, to
	}
	st, err := open(ctx, loc)
	if err != nil {
		return err
	}
	var names []string
	if dir == "up" {
		err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(local, p)
			names = append(names, filepath.ToSlash(rel))
			return err
		})
	} else {
		names, err = st.list(ctx)
	}
	if err != nil {
		return err
	}
	return each(names, func(name string) error {
		file := filepath.Join(local, filepath.FromSlash(name))
		switch dir {
		case "up":
			return st.put(ctx, name, file)
		case "rm":
			return st.remove(ctx, name)
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		return st.get(ctx, name, file)
	})
}

// each runs fn on names, eight at a time, and returns the first error.
func each(names []string, fn func(string) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		work = make(chan string)
	)
	for range 8 {
		wg.Go(func() {
			for n := range work {
				if err := fn(n); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", n, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

func open(ctx context.Context, loc string) (store, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(u.Path, "/") + "/"
	switch u.Scheme {
	case "gs":
		c, err := gcs.NewClient(ctx)
		if err != nil {
			return nil, err
		}
		return gcsStore{b: c.Bucket(u.Host), prefix: prefix}, nil
	case "abfs", "abfss", "wasb", "wasbs":
		c, err := azblob.NewClientFromConnectionString(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
		if err != nil {
			return nil, err
		}
		return azureStore{c: c, container: u.User.Username(), prefix: prefix}, nil
	}
	return nil, fmt.Errorf("%s: not a gs:// or Azure location", loc)
}

type gcsStore struct {
	b      *gcs.BucketHandle
	prefix string
}

func (s gcsStore) put(ctx context.Context, name, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	w := s.b.Object(s.prefix + name).NewWriter(ctx)
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func (s gcsStore) get(ctx context.Context, name, file string) error {
	r, err := s.b.Object(s.prefix + name).NewReader(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	return write(file, r)
}

func (s gcsStore) remove(ctx context.Context, name string) error {
	return s.b.Object(s.prefix + name).Delete(ctx)
}

func (s gcsStore) list(ctx context.Context) ([]string, error) {
	var names []string
	it := s.b.Objects(ctx, &gcs.Query{Prefix: s.prefix})
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if name := strings.TrimPrefix(a.Name, s.prefix); name != "" && !strings.HasSuffix(name, "/") {
			names = append(names, name)
		}
	}
}

type azureStore struct {
	c         *azblob.Client
	container string
	prefix    string
}

func (s azureStore) put(ctx context.Context, name, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = s.c.UploadFile(ctx, s.container, s.prefix+name, f, nil)
	return err
}

func (s azureStore) get(ctx context.Context, name, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = s.c.DownloadFile(ctx, s.container, s.prefix+name, f, nil)
	return errors.Join(err, f.Close())
}

func (s azureStore) remove(ctx context.Context, name string) error {
	_, err := s.c.DeleteBlob(ctx, s.container, s.prefix+name, nil)
	return err
}

func (s azureStore) list(ctx context.Context) ([]string, error) {
	var names []string
	pages := s.c.NewListBlobsFlatPager(s.container, &azblob.ListBlobsFlatOptions{Prefix: &s.prefix})
	for pages.More() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, strings.TrimPrefix(*b.Name, s.prefix))
		}
	}
	return names, nil
}

func write(file string, r io.Reader) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
