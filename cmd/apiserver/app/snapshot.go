package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sidecarset/apiserver/pkg/objectstore"
)

// Environment variables holding the object store's credentials, the names AWS's tools read: the
// chart sets them from the Secret a user names.
const (
	envAccessKeyID     = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	envSessionToken    = "AWS_SESSION_TOKEN"
)

// snapshotOptions are the flags of `snapshot upload` and `snapshot download`: where the object
// store is.
type snapshotOptions struct {
	Endpoint  string
	Bucket    string
	Prefix    string
	Region    string
	PathStyle bool
	CAFile    string
	Timeout   time.Duration
}

func (o *snapshotOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", "", "the object store's URL, http or https (https://s3.eu-west-1.amazonaws.com, http://minio.storage.svc:9000)")
	fs.StringVar(&o.Bucket, "bucket", "", "the bucket")
	fs.StringVar(&o.Prefix, "prefix", "", "upload: prepended to each object's key as given (e.g. sidecarset/prod/)")
	fs.StringVar(&o.Region, "region", "us-east-1", "the region the requests are signed for")
	fs.BoolVar(&o.PathStyle, "path-style", true, "address objects as ENDPOINT/BUCKET/KEY; false: BUCKET.ENDPOINT-HOST/KEY (virtual-hosted style)")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM CA certificates trusted for an https endpoint, besides the system's")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "how long the transfer may take")
}

// validate checks the flags, naming the one at fault.
func (o *snapshotOptions) validate() error {
	var errs []error
	u, err := url.Parse(o.Endpoint)
	switch {
	case o.Endpoint == "":
		errs = append(errs, errors.New("--endpoint: required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("--endpoint: %w", err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("--endpoint: %q is not an http or https URL with a host", o.Endpoint))
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		errs = append(errs, fmt.Errorf("--endpoint: %q has a query, fragment or user: give scheme, host, port and path only", o.Endpoint))
	}
	if o.Bucket == "" {
		errs = append(errs, errors.New("--bucket: required"))
	}
	if o.Region == "" {
		errs = append(errs, errors.New("--region: required"))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout: %s is not positive", o.Timeout))
	}
	return errors.Join(errs...)
}

// credentials reads the access key from the environment (getenv), naming a missing variable.
func credentials(getenv func(string) string) (objectstore.Credentials, error) {
	c := objectstore.Credentials{AccessKeyID: getenv(envAccessKeyID), SecretAccessKey: getenv(envSecretAccessKey), SessionToken: getenv(envSessionToken)}
	var errs []error
	if c.AccessKeyID == "" {
		errs = append(errs, errors.New(envAccessKeyID+": required in the environment"))
	}
	if c.SecretAccessKey == "" {
		errs = append(errs, errors.New(envSecretAccessKey+": required in the environment"))
	}
	return c, errors.Join(errs...)
}

// bucket returns the bucket the flags and the environment describe.
func (o *snapshotOptions) bucket(getenv func(string) string) (*objectstore.Bucket, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	creds, err := credentials(getenv)
	if err != nil {
		return nil, err
	}
	endpoint, _ := url.Parse(o.Endpoint)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file: %s holds no PEM certificate", o.CAFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &objectstore.Bucket{Endpoint: endpoint, Name: o.Bucket, Region: o.Region, PathStyle: o.PathStyle,
		Credentials: creds, HTTP: &http.Client{Transport: transport}, Now: time.Now}, nil
}

// newSnapshotCommand is `snapshot upload FILE` and `snapshot download KEY FILE`: copies of etcd
// snapshots to and from an S3-compatible object store, for the backup CronJobs and a restore.
func newSnapshotCommand() *cobra.Command {
	o := &snapshotOptions{}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Copy etcd snapshots to and from an S3-compatible object store (credentials: " + envAccessKeyID + ", " + envSecretAccessKey + ", " + envSessionToken + ")",
	}
	o.addFlags(cmd.PersistentFlags())
	cmd.AddCommand(&cobra.Command{
		Use:   "upload FILE",
		Short: "Upload FILE as PREFIX<name>-<UTC time>.db and print its key",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return o.transfer(c, func(ctx context.Context, b *objectstore.Bucket) error {
				key := objectstore.SnapshotKey(o.Prefix, args[0], b.Now())
				n, err := b.Put(ctx, key, args[0])
				if err == nil {
					_, _ = fmt.Fprintf(c.OutOrStdout(), "uploaded %s (%d bytes) to %s as %s\n", args[0], n, o.Bucket, key)
				}
				return err
			})
		},
	}, &cobra.Command{
		Use:   "download KEY FILE",
		Short: "Download the object KEY (as upload printed it) to FILE",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return o.transfer(c, func(ctx context.Context, b *objectstore.Bucket) error {
				n, err := b.Get(ctx, args[0], args[1])
				if err == nil {
					_, _ = fmt.Fprintf(c.OutOrStdout(), "downloaded %s from %s (%d bytes) to %s\n", args[0], o.Bucket, n, args[1])
				}
				return err
			})
		},
	})
	return cmd
}

// transfer runs do against the bucket within the timeout.
func (o *snapshotOptions) transfer(c *cobra.Command, do func(context.Context, *objectstore.Bucket) error) error {
	b, err := o.bucket(os.Getenv)
	if err != nil {
		return err
	}
	c.SilenceUsage = true
	ctx, cancel := context.WithTimeout(c.Context(), o.Timeout)
	defer cancel()
	return do(ctx, b)
}
