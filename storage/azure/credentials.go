package azure

import (
	"fmt"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// credentials are how an account is reached; key and sas both empty mean
// the environment's credential chain.
type credentials struct {
	endpoint string
	key      *container.SharedKeyCredential
	sas      string
}

// credentialsFor finds the endpoint and credentials of account (see the
// package comment for the order).
func credentialsFor(account, suffix string, o Options) (credentials, error) {
	cr := credentials{endpoint: fmt.Sprintf("https://%s.blob.%s", account, suffix)}
	if s := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); s != "" {
		cs := parseConnectionString(s)
		if cs["AccountName"] == account || cs["AccountName"] == "" && cs["BlobEndpoint"] != "" {
			if e := cs["BlobEndpoint"]; e != "" {
				cr.endpoint = e
			} else if suf := cs["EndpointSuffix"]; suf != "" {
				cr.endpoint = fmt.Sprintf("https://%s.blob.%s", account, suf)
			}
			switch {
			case cs["AccountKey"] != "":
				key, err := container.NewSharedKeyCredential(account, cs["AccountKey"])
				if err != nil {
					return cr, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING: AccountKey: %w", err)
				}
				cr.key = key
			case cs["SharedAccessSignature"] != "":
				cr.sas = cs["SharedAccessSignature"]
			}
		}
	}
	if e := os.Getenv("STATEUTIL_AZURE_ENDPOINT"); e != "" {
		cr.endpoint = e
	}
	if o.Endpoint != "" {
		cr.endpoint = o.Endpoint
	}
	if cr.key != nil || cr.sas != "" {
		return cr, nil
	}
	if named := os.Getenv("AZURE_STORAGE_ACCOUNT"); named == "" || named == account {
		if k := os.Getenv("AZURE_STORAGE_KEY"); k != "" {
			key, err := container.NewSharedKeyCredential(account, k)
			if err != nil {
				return cr, fmt.Errorf("AZURE_STORAGE_KEY: %w", err)
			}
			cr.key = key
			return cr, nil
		}
	}
	cr.sas = os.Getenv("AZURE_STORAGE_SAS_TOKEN")
	return cr, nil
}

// parseConnectionString splits "Key=value;Key=value" (values may hold
// "=", as keys and signatures do).
func parseConnectionString(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
			out[k] = v
		}
	}
	return out
}
