package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// backupContainers returns a backup CronJob's init containers and containers by name.
func backupContainers(t *testing.T, cron *unstructured.Unstructured) (init, main map[string]map[string]interface{}) {
	t.Helper()
	byName := func(field string) map[string]map[string]interface{} {
		out := map[string]map[string]interface{}{}
		list, _ := podSpec(t, cron)[field].([]interface{})
		for _, c := range list {
			c := c.(map[string]interface{})
			out[c["name"].(string)] = c
		}
		return out
	}
	return byName("initContainers"), byName("containers")
}

func asStrings(v interface{}) []string {
	var out []string
	list, _ := v.([]interface{})
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

// TestBackupObjectStore: off by default, the backup Jobs run etcdctl alone; with
// etcd.backup.objectStore, etcdctl runs first (an init container) and the server's image uploads
// the file it wrote, with every value in its flags, environment and volumes.
func TestBackupObjectStore(t *testing.T) {
	e := setup(t)
	_, main := backupContainers(t, get(t, e.template(t, existingSecrets...), backup))
	if len(main) != 1 || main["snapshot"] == nil {
		t.Errorf("backup containers by default: %v, want snapshot alone", containerKeys(main))
	}

	objs := e.template(t, with(existingSecrets, "image.registry=registry.example.com", "etcd.backup.hours={0,13}",
		"etcd.backup.objectStore.enabled=true", "etcd.backup.objectStore.endpoint=https://s3.eu-west-1.amazonaws.com",
		"etcd.backup.objectStore.bucket=team-backups", "etcd.backup.objectStore.prefix=sidecarset/prod/",
		"etcd.backup.objectStore.region=eu-west-1", "etcd.backup.objectStore.pathStyle=false",
		"etcd.backup.objectStore.credentialsSecret.name=s3-credentials", "etcd.backup.objectStore.credentialsSecret.accessKeyIDKey=id",
		"etcd.backup.objectStore.credentialsSecret.secretAccessKeyKey=secret", "etcd.backup.objectStore.credentialsSecret.sessionTokenKey=token",
		"etcd.backup.objectStore.caSecret.name=s3-ca", "etcd.backup.objectStore.caSecret.key=bundle.pem")...)
	serverImage := firstContainer(t, get(t, objs, server))["image"]
	for _, hh := range []string{"00", "13"} {
		cron := get(t, objs, Key{"CronJob", Namespace, "sidecarset-etcd-backup-" + hh})
		init, main := backupContainers(t, cron)
		snapshot, upload := init["snapshot"], main["upload"]
		if len(init) != 1 || snapshot == nil || len(main) != 1 || upload == nil {
			t.Fatalf("%s: init containers %v, containers %v; want snapshot, then upload", hh, containerKeys(init), containerKeys(main))
		}
		file := "/backup/snapshot-" + hh + ".db"
		if cmd := asStrings(snapshot["command"]); cmd[len(cmd)-1] != file {
			t.Errorf("%s: etcdctl writes %v, want %s", hh, cmd, file)
		}
		if upload["image"] != serverImage {
			t.Errorf("%s: upload image %v, want the server's %v", hh, upload["image"], serverImage)
		}
		wantArgs := []string{"snapshot", "upload", file, "--endpoint=https://s3.eu-west-1.amazonaws.com", "--bucket=team-backups",
			"--prefix=sidecarset/prod/", "--region=eu-west-1", "--path-style=false", "--ca-file=/etc/objectstore/ca/bundle.pem"}
		if diff := cmp.Diff(wantArgs, asStrings(upload["args"])); diff != "" {
			t.Errorf("%s: upload args (-want +got):\n%s", hh, diff)
		}
		secretRef := func(key string) interface{} {
			return map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": "s3-credentials", "key": key}}
		}
		wantEnv := []interface{}{
			map[string]interface{}{"name": "AWS_ACCESS_KEY_ID", "valueFrom": secretRef("id")},
			map[string]interface{}{"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": secretRef("secret")},
			map[string]interface{}{"name": "AWS_SESSION_TOKEN", "valueFrom": secretRef("token")},
		}
		if diff := cmp.Diff(wantEnv, upload["env"]); diff != "" {
			t.Errorf("%s: upload env (-want +got):\n%s", hh, diff)
		}
		wantMounts := []interface{}{
			map[string]interface{}{"name": "backup", "mountPath": "/backup", "readOnly": true},
			map[string]interface{}{"name": "objectstore-ca", "mountPath": "/etc/objectstore/ca", "readOnly": true},
		}
		if diff := cmp.Diff(wantMounts, upload["volumeMounts"]); diff != "" {
			t.Errorf("%s: upload volume mounts (-want +got):\n%s", hh, diff)
		}
		var ca interface{}
		for _, v := range podSpec(t, cron)["volumes"].([]interface{}) {
			if v.(map[string]interface{})["name"] == "objectstore-ca" {
				ca = v.(map[string]interface{})["secret"]
			}
		}
		wantCA := map[string]interface{}{"secretName": "s3-ca", "items": []interface{}{map[string]interface{}{"key": "bundle.pem", "path": "bundle.pem"}}, "defaultMode": int64(0o440)}
		if diff := cmp.Diff(wantCA, normalizeInts(ca)); diff != "" {
			t.Errorf("%s: CA volume (-want +got):\n%s", hh, diff)
		}
	}

	// Without a session token or CA: neither the variable nor the volume.
	objs = e.template(t, with(existingSecrets, "etcd.backup.objectStore.enabled=true", "etcd.backup.objectStore.endpoint=http://minio.storage.svc:9000",
		"etcd.backup.objectStore.bucket=b", "etcd.backup.objectStore.credentialsSecret.name=s3")...)
	_, main = backupContainers(t, get(t, objs, backup))
	if args := asStrings(main["upload"]["args"]); !hasAll(args, "--path-style=true", "--region=us-east-1") || strings.Contains(strings.Join(args, " "), "--ca-file") {
		t.Errorf("upload args %q: want path style and us-east-1 by default, no --ca-file", args)
	}
	if env := main["upload"]["env"].([]interface{}); len(env) != 2 {
		t.Errorf("upload env %v, want the access key's two variables", env)
	}
}

// normalizeInts turns the float64 numbers of decoded JSON into int64.
func normalizeInts(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, e := range x {
			out[k] = normalizeInts(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = normalizeInts(e)
		}
		return out
	case float64:
		return int64(x)
	}
	return v
}

func containerKeys(m map[string]map[string]interface{}) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBackupObjectStoreRefused: what the chart refuses with etcd.backup.objectStore enabled, naming
// the value.
func TestBackupObjectStoreRefused(t *testing.T) {
	e := setup(t)
	on := with(existingSecrets, "etcd.backup.objectStore.enabled=true")
	full := with(on, "etcd.backup.objectStore.endpoint=https://s3.example.com", "etcd.backup.objectStore.bucket=b",
		"etcd.backup.objectStore.credentialsSecret.name=s3")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no endpoint", on, "etcd.backup.objectStore.endpoint is required with etcd.backup.objectStore.enabled"},
		{"no bucket", with(on, "etcd.backup.objectStore.endpoint=https://s3.example.com"), "etcd.backup.objectStore.bucket is required with etcd.backup.objectStore.enabled"},
		{"no credentials", with(on, "etcd.backup.objectStore.endpoint=https://s3.example.com", "etcd.backup.objectStore.bucket=b"),
			"etcd.backup.objectStore.credentialsSecret.name is required with etcd.backup.objectStore.enabled"},
		{"not http", with(full, "etcd.backup.objectStore.endpoint=s3://b"), `etcd.backup.objectStore.endpoint: "s3://b" is not an http or https URL`},
		{"query", with(full, "etcd.backup.objectStore.endpoint=https://s3.example.com/?x=1"), `etcd.backup.objectStore.endpoint: "https://s3.example.com/?x=1" is not an http or https URL`},
		{"empty region", with(full, "etcd.backup.objectStore.region="), "at '/etcd/backup/objectStore/region'"},
		{"unknown value", with(full, "etcd.backup.objectStore.secret=x"), "additional properties 'secret' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Template(e.helm, e.root, tc.args...)
			if err == nil {
				t.Fatalf("helm template rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}
