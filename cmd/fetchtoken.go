package cmd

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/internal/kerberos"
	"github.com/stateutil/stateutil/storage"
)

func newFetchTokenCommand(e *env) *cobra.Command {
	var renewer, output string
	c := &cobra.Command{
		Use:   "fetch-token HDFS_URI --output FILE",
		Short: "Get an HDFS delegation token into a Hadoop credentials file",
		Long: `Ask the NameNode of HDFS_URI for a delegation token, logged in with Kerberos (a ticket
or --keytab), and write it to FILE as a Hadoop credentials file (the format of
HADOOP_TOKEN_FILE_LOCATION; version 0, which every Hadoop release reads), filed under
the service Hadoop's clients look it up by: the NameNode's IP address and port, or
ha-hdfs:NAMESERVICE. A process given the file in HADOOP_TOKEN_FILE_LOCATION then
reaches HDFS with no Kerberos identity of its own, until the token expires.

--renewer is who may renew the token, as YARN's ResourceManager does for the
applications it runs; by default the principal of yarn.resourcemanager.principal in
HADOOP_CONF_DIR (_HOST the ResourceManager's host), as Hadoop's TokenCache picks it.

` + exitCodeHelp,
		Example: `  stateutil fetch-token hdfs://namenode:8020/ --output job.token
  HADOOP_TOKEN_FILE_LOCATION=job.token stateutil inspect hdfs://namenode:8020/flink/chk-7`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			u, err := url.Parse(args[0])
			if err != nil || u.Scheme != "hdfs" {
				return usageErrorf("%s is no hdfs:// URI", args[0])
			}
			if output == "" {
				return usageErrorf("--output is required")
			}
			if renewer == "" {
				if renewer, err = defaultRenewer(); err != nil {
					return err
				}
			}
			t, err := storage.HDFSDelegationToken(c.Context(), u, e.hdfs, renewer)
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if err := hdfs.WriteCredentials(&b, []hdfs.Token{*t}); err != nil {
				return err
			}
			// Temporary name, then rename: a reader never sees half a file.
			tmp := filepath.Join(filepath.Dir(output), "."+filepath.Base(output)+".tmp")
			if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, output); err != nil {
				os.Remove(tmp)
				return err
			}
			c.Printf("%s for %s, renewer %s, in %s\n", t.Kind, t.Service, renewer, output)
			return nil
		},
	}
	c.Flags().StringVar(&renewer, "renewer", "", "who may renew the token (default: yarn.resourcemanager.principal)")
	c.Flags().StringVarP(&output, "output", "o", "", "the credentials file to write")
	return c
}

// defaultRenewer is yarn.resourcemanager.principal with _HOST the
// ResourceManager's host, as Hadoop's TokenCache names the renewer.
func defaultRenewer() (string, error) {
	conf, err := hadoopconf.LoadFromEnvironment()
	if err != nil {
		return "", err
	}
	p := conf["yarn.resourcemanager.principal"]
	if p == "" {
		return "", usageErrorf("no --renewer and no yarn.resourcemanager.principal in HADOOP_CONF_DIR (%q)", os.Getenv("HADOOP_CONF_DIR"))
	}
	host := conf["yarn.resourcemanager.hostname"]
	if addr := conf["yarn.resourcemanager.address"]; addr != "" {
		host, _, _ = strings.Cut(addr, ":")
	}
	name, realm, _ := strings.Cut(p, "@")
	name = kerberos.ServicePrincipal(name, "", host)
	if realm != "" {
		name += "@" + realm
	}
	return name, nil
}
