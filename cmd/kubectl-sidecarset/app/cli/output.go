package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/scheme"
)

// Output: API objects (inject, migrate, rollout history, preview and actions) print with kubectl's
// printers (-o yaml|json|name|go-template|go-template-file|jsonpath|jsonpath-file|jsonpath-as-json
// and custom-columns); reports (check, explain, version) are not API objects and print as a human
// text, yaml, json, or through a template (go-template, jsonpath).

const customColumnsPrefix = "custom-columns="

// addPrintFlags adds kubectl's output flags (-o, --template, --allow-missing-template-keys,
// --show-managed-fields) to flags, for every command.
func addPrintFlags(flags *pflag.FlagSet, pf *genericclioptions.PrintFlags) {
	holder := &cobra.Command{}
	pf.AddFlags(holder)
	holder.Flags().Lookup("output").Usage = "Output format. One of: (" + strings.Join(pf.AllowedFormats(), ", ") +
		", custom-columns=HEADER:JSONPATH,...). Reports (check, explain, version) take yaml, json, go-template and jsonpath"
	flags.AddFlagSet(holder.Flags())
}

// CheckOutput validates -o before a command runs.
func (o *Options) CheckOutput() error {
	if o.Output == "" || strings.HasPrefix(o.Output, customColumnsPrefix) {
		return nil
	}
	_, err := o.PrintFlags.ToPrinter()
	return err
}

// Print writes v with -o: an API object with kubectl's printers, a report as yaml, json or a
// template; without -o, human writes it (yaml when human is nil).
func (o *Options) Print(v any, human func(io.Writer) error) error {
	if o.Output == "" && human != nil {
		return human(o.Out)
	}
	if obj, ok := v.(runtime.Object); ok {
		return o.printObject(obj)
	}
	return o.printReport(v)
}

// printObject prints an API object (typed or unstructured, a list or one object).
func (o *Options) printObject(obj runtime.Object) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	return p.PrintObj(u, o.Out)
}

// printer is the printer of -o for API objects; YAML without -o.
func (o *Options) printer() (printers.ResourcePrinter, error) {
	switch {
	case o.Output == "":
		return &printers.YAMLPrinter{}, nil
	case strings.HasPrefix(o.Output, customColumnsPrefix):
		return newColumnsPrinter(strings.TrimPrefix(o.Output, customColumnsPrefix))
	}
	return o.PrintFlags.ToPrinter()
}

// PrintObjects prints objects: as YAML documents, each on its own with -o name, else one object or
// a List of them.
func (o *Options) PrintObjects(objs []*unstructured.Unstructured) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	if o.Output == "" || o.Output == "yaml" || o.Output == "name" {
		for _, obj := range objs {
			if err := p.PrintObj(obj, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	if len(objs) == 1 {
		return p.PrintObj(objs[0], o.Out)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, obj := range objs {
		list.Items = append(list.Items, *obj)
	}
	return p.PrintObj(list, o.Out)
}

// printReport prints a report: yaml, json, or a template over its JSON form (a list as a List
// with items).
func (o *Options) printReport(v any) error {
	switch o.Output {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	case "", "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	case "name":
		return fmt.Errorf("-o name: this command prints a report, not API objects: use -o yaml, json, jsonpath or go-template")
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var content any
	if err := json.Unmarshal(data, &content); err != nil {
		return err
	}
	m, ok := content.(map[string]any)
	if !ok {
		m = map[string]any{"kind": "List", "items": content}
	}
	p, err := o.PrintFlags.TemplatePrinterFlags.ToPrinter(o.Output)
	if err != nil {
		return err
	}
	return p.PrintObj(&unstructured.Unstructured{Object: m}, o.Out)
}

// toUnstructured turns a typed object of the SidecarSet API into unstructured form with its
// apiVersion and kind, and a typed list into a list whose items carry theirs, as kubectl's
// printers need.
func toUnstructured(obj runtime.Object) (runtime.Object, error) {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		return obj, nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		gvk = gvks[0]
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if !meta.IsListType(obj) {
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	items, _ := content["items"].([]any)
	delete(content, "items")
	list := &unstructured.UnstructuredList{Object: content}
	list.SetGroupVersionKind(gvk)
	item := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: an item is not an object", gvk.Kind)
		}
		u := unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(item)
		list.Items = append(list.Items, u)
	}
	return list, nil
}

// columnsPrinter prints -o custom-columns=HEADER:JSONPATH,...: one row per object (per item of a
// list), as kubectl get does.
type columnsPrinter struct {
	headers []string
	paths   []*jsonpath.JSONPath
}

func newColumnsPrinter(spec string) (*columnsPrinter, error) {
	p := &columnsPrinter{}
	for _, col := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(col, ":")
		if !ok || header == "" || expr == "" {
			return nil, fmt.Errorf("custom-columns: %q is not HEADER:JSONPATH", col)
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(relaxedJSONPath(expr)); err != nil {
			return nil, fmt.Errorf("custom-columns: %s: %w", header, err)
		}
		p.headers, p.paths = append(p.headers, header), append(p.paths, jp)
	}
	return p, nil
}

// relaxedJSONPath accepts .a.b, a.b and {.a.b} as kubectl does.
func relaxedJSONPath(expr string) string {
	if strings.HasPrefix(expr, "{") {
		return expr
	}
	return "{." + strings.TrimPrefix(expr, ".") + "}"
}

// PrintObj prints the header and the object's rows.
func (p *columnsPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(p.headers, "\t"))
	for _, item := range items {
		u, ok := item.(runtime.Unstructured)
		if !ok {
			return fmt.Errorf("custom-columns: %T is not unstructured", item)
		}
		cells := make([]string, len(p.paths))
		for i, jp := range p.paths {
			var b bytes.Buffer
			if err := jp.Execute(&b, u.UnstructuredContent()); err != nil {
				return err
			}
			cells[i] = b.String()
			if cells[i] == "" {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
