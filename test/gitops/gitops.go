// Package gitops reads SidecarSets and NamespacedSidecarSets as GitOps tools do: Argo CD through
// the custom health script this project ships (artifacts/gitops/argocd/health.lua), run the way
// Argo CD runs a health script of its argocd-cm ConfigMap, and Flux through kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status). The unit tests read objects built by hand and by
// the controller's condition writers, the e2e suite objects read from a cluster; all through
// Evaluate, so that they check the same thing.
package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// ScriptPath is the Argo CD health script, from the repository's root.
const ScriptPath = "artifacts/gitops/argocd/health.lua"

// ConfigMapPath is the argocd-cm data that installs the script for both kinds, from the
// repository's root.
const ConfigMapPath = "artifacts/gitops/argocd/argocd-cm.yaml"

// ConfigMapKeys are the argocd-cm keys of the health checks of both kinds.
var ConfigMapKeys = []string{
	"resource.customizations.health.apps.kruise.io_SidecarSet",
	"resource.customizations.health.apps.kruise.io_NamespacedSidecarSet",
}

// The health statuses of Argo CD.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// scriptTimeout is how long Argo CD lets a health script run.
const scriptTimeout = time.Second

// Health is what a health script returns.
type Health struct {
	Status, Message string
}

// Verdict is what Argo CD (through the health script) and kstatus say of one object.
type Verdict struct {
	ArgoCD         Health
	Kstatus        status.Status
	KstatusMessage string
}

// Evaluate reads obj with the health script and with kstatus.
func Evaluate(script string, obj *unstructured.Unstructured) (Verdict, error) {
	h, err := ArgoCD(script, obj.Object)
	if err != nil {
		return Verdict{}, fmt.Errorf("health script: %w", err)
	}
	res, err := status.Compute(obj)
	if err != nil {
		return Verdict{}, fmt.Errorf("kstatus: %w", err)
	}
	return Verdict{ArgoCD: h, Kstatus: res.Status, KstatusMessage: res.Message}, nil
}

// ArgoCD runs script on obj as Argo CD runs a custom health script: in a new Lua state with only
// the libraries Argo CD opens for a script of argocd-cm (package, base and table; not string,
// math, io or debug, and not os, of which Argo CD opens a subset the script does not use), obj as
// the global obj, one second to run. The script must return a table whose status is one Argo CD
// knows.
func ArgoCD(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return Health{}, fmt.Errorf("open %q: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	return health(l.Get(-1))
}

// health reads the table a health script returned.
func health(v lua.LValue) (Health, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the script returned a %s, not a table", v.Type())
	}
	st, ok := t.RawGetString("status").(lua.LString)
	if !ok {
		return Health{}, fmt.Errorf("the script returned no status string: %v", t.RawGetString("status"))
	}
	switch h := (Health{Status: string(st)}); h.Status {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
		switch m := t.RawGetString("message").(type) {
		case lua.LString:
			h.Message = string(m)
		case *lua.LNilType:
		default:
			return Health{}, fmt.Errorf("the script returned a %s message", m.Type())
		}
		return h, nil
	}
	return Health{}, fmt.Errorf("the script returned status %q, which Argo CD does not know", st)
}

// luaValue is v as Argo CD hands an object's field to a script: numbers as Lua numbers, maps as
// tables, lists as sequences, json.Number as a string.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(luaValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, luaValue(l, item))
		}
		return t
	}
	return lua.LNil
}
