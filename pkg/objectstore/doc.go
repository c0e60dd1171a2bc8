// Package objectstore copies files to and from an S3-compatible object store (AWS S3, MinIO, Ceph
// RGW, Google Cloud Storage's XML API, and others that accept AWS Signature Version 4): one PUT or
// GET of a whole object, signed with SigV4 over the object's SHA-256, so that the store refuses a
// body changed in flight. It serves the backup CronJobs' off-cluster copies of etcd snapshots
// (`sidecarset-apiserver snapshot upload|download`).
//
// Sign is pure: the canonical request, string to sign and signature of the SigV4 specification,
// computed from the request, the credentials, the region and the time given. Client does the I/O.
// A single PUT holds up to 5 GiB, more than etcd's largest backend quota (8 GiB is etcd's
// suggested maximum, the chart's default is 4 GiB): no multipart upload.
package objectstore
