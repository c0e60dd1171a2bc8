package certificates

import (
	"fmt"
	"time"
)

// The Secrets of the installation, as the chart names them in every certificate source.
const (
	EtcdCASecret     = "sidecarset-etcd-ca"
	ServingCASecret  = "sidecarset-serving-ca"
	EtcdServerSecret = "sidecarset-etcd-server"
	EtcdPeerSecret   = "sidecarset-etcd-peer"
	EtcdClientSecret = "sidecarset-etcd-client"
	ServingSecret    = "sidecarset-apiserver-tls"
)

// Default lifetimes: 10 years for a CA, 1 year for a leaf.
const (
	DefaultCALife   = 10 * 365 * 24 * time.Hour
	DefaultLeafLife = 365 * 24 * time.Hour
)

// Installation returns what the chart's installation in namespace needs, with etcdMembers etcd
// members (the StatefulSet sidecarset-etcd behind the headless Service of that name) and the
// server behind the Service sidecarset-apiserver; the names are the chart's.
func Installation(namespace string, etcdMembers int, caLife, leafLife time.Duration) Spec {
	var members []string
	for i := 0; i < etcdMembers; i++ {
		members = append(members, fmt.Sprintf("sidecarset-etcd-%d.sidecarset-etcd.%s.svc", i, namespace))
	}
	service := "sidecarset-apiserver." + namespace + ".svc"
	return Spec{
		CALife:   caLife,
		LeafLife: leafLife,
		CAs: []CA{
			{Secret: EtcdCASecret, CommonName: "sidecarset-etcd-ca"},
			{Secret: ServingCASecret, CommonName: "sidecarset-apiserver-ca"},
		},
		Leaves: []Leaf{
			// etcd's client port; client usage too: etcd's gateway dials its own listener.
			{Secret: EtcdServerSecret, CA: EtcdCASecret, CommonName: "sidecarset-etcd", Server: true, Client: true,
				DNSNames: append(append([]string{}, members...), "sidecarset-etcd", "sidecarset-etcd."+namespace,
					"sidecarset-etcd."+namespace+".svc", "localhost"),
				IPs: []string{"127.0.0.1"}},
			// Between members: each presents it as server and as client.
			{Secret: EtcdPeerSecret, CA: EtcdCASecret, CommonName: "sidecarset-etcd-peer", Server: true, Client: true,
				DNSNames: members},
			// The server's and the backups' client certificate: no names, etcd would check them.
			{Secret: EtcdClientSecret, CA: EtcdCASecret, CommonName: "sidecarset-apiserver", Client: true},
			{Secret: ServingSecret, CA: ServingCASecret, CommonName: service, Server: true,
				DNSNames: []string{service, service + ".cluster.local"}},
		},
	}
}

// Validate checks the lifetimes: a CA lives at least three times as long as a leaf, so that a
// leaf is not cut short by the CA that signs it (a CA signs from 5/6 of its predecessor's life to
// 5/6 of its own).
func (s Spec) Validate() error {
	switch {
	case s.LeafLife <= 0:
		return fmt.Errorf("the certificates' lifetime must be positive, not %v", s.LeafLife)
	case s.CALife < 3*s.LeafLife:
		return fmt.Errorf("the CAs' lifetime (%v) must be at least three times the certificates' (%v)", s.CALife, s.LeafLife)
	}
	return nil
}
