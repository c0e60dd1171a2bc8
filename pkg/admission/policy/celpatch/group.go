package celpatch

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// A group policy injects several SidecarSets (its members, sorted by name) with one evaluation:
// kube-apiserver checks the match constraints of every stored policy on every pod create and pays
// a conversion of the pod for each policy that applies, so a thousand SidecarSets compiled one per
// policy would cost every pod milliseconds. The members of a group share a label key their
// selectors require (the policy's objectSelector asks only that the pod has it); each member's
// selectors, namespace and idempotence checks are CEL (variables.m[k]), and the JSONPatch of a
// mutation inserts the parts of every member that applies at the index it has once the members
// before it are in: the pod is the same as with one policy per SidecarSet applied in name order.
//
// A mutation holds members up to maxPieceSize; a policy with more holds several mutations,
// applied in order (kube-apiserver evaluates each against the pod the previous one produced).

// maxExpressionSize keeps each expression below CEL's expression size limit (100,000 code points).
const maxExpressionSize = 80_000

// maxPieceSize bounds the expressions that hold per-member parts with comprehensions, empty
// lists or literals (the mutations and the variables s0, s1, ...): CEL's type checker copies its
// map of type variables, which grows with every comprehension and empty list, at each list
// element it checks, so its time grows with the square of such an expression's size. The inserts
// of containers and init containers, most of a member's CEL, are variables of their own
// (insertVariables) for that reason, and a chunk's per-member values are constant lists its
// variables index (see chunk.variables), which the checker takes in linear time; what is left in
// a mutation is its members' volumes and secrets (see chunks). Each mutation costs every pod the
// policy applies to: kube-apiserver converts the pod for CEL, encodes it to JSON, patches it and
// decodes it again for every mutation of a policy that applies, even one that patches nothing.
// With 8,000-character mutations a pod 5 SidecarSets of a 17-member group select cost 9.4 ms more
// to create than a bare one, with 32,000 2.6 ms; a 22-member group of the benchmarks' one-key
// shape in one mutation instead of two takes kube-apiserver's evaluator 1.0 ms instead of 1.26 for
// such a pod, and 0.20 instead of 0.32 for a pod of its key none of them selects
// (BenchmarkGroupPolicy).
const maxPieceSize = 32_000

// maxSelectsPiece bounds the variables s0, s1, ... (whether each member selects the pod): they
// are variables, which kube-apiserver evaluates once however many there are, so they can be
// small, and their type-checking time stays in proportion to the members (a one-key group's single
// s0 of 4,000 characters took 41 ms of the 111 ms its variables took to compile).
const maxSelectsPiece = 1_000

// span is the members lo..hi-1 of one piece.
type span struct{ lo, hi int }

// pieces splits parts of the given sizes, in order, into spans of at most max characters (a part
// larger than that is a span of its own).
func pieces(sizes []int, max int) []span {
	var out []span
	start, total := 0, 0
	for k, n := range sizes {
		if k > start && total+n > max {
			out = append(out, span{start, k})
			start, total = k, 0
		}
		total += n
	}
	return append(out, span{start, len(sizes)})
}

// groupVariables are the policy-wide named expressions: the pod's labels, containers and
// annotations, and m, one boolean per member: the member applies to the pod (which must be active,
// outside the excluded namespaces and outside the namespaces labelled
// apps.ControlPlaneNamespaceLabel).
func groupVariables(members []*Member, excluded []string) []admissionregistrationv1.Variable {
	var vs []admissionregistrationv1.Variable
	add := func(name, format string, args ...any) {
		vs = append(vs, admissionregistrationv1.Variable{Name: name, Expression: fmt.Sprintf(format, args...)})
	}
	add("eligible", "%s && %s", eligibleCEL(excluded), outsideControlPlaneCEL())
	add("labels", "object.metadata.?labels.orValue({})")
	add("nsLabels", "namespaceObject.metadata.?labels.orValue({})")
	add("ann", "object.metadata.?annotations.orValue({})")
	add("injectedNames", "variables.ann[?%s].orValue('').split(',')", Quote(sidecar.InjectedListAnnotation))
	add("names", "object.spec.containers.map(c, c.name)")
	add("injected", "object.spec.containers.map(c, %s)", IsInjected("c"))
	add("declared", "object.spec.containers.filter(c, !(%s)).map(c, c.name)", IsInjected("c"))
	add("anyInjected", "variables.injected.exists(b, b)")
	add("apps", "lists.range(size(variables.names)).filter(i, !variables.injected[i])")
	add("lastApp", "size(variables.apps) == 0 ? -1 : variables.apps[size(variables.apps) - 1]")
	add("inits", "object.spec.?initContainers.orValue([])")
	add("initNames", "variables.inits.map(c, c.name)")
	add("initInjected", "variables.inits.map(c, %s)", IsInjected("c"))
	add("declaredInit", "variables.inits.filter(c, !(%s)).map(c, c.name)", IsInjected("c"))
	add("anyInitInjected", "variables.initInjected.exists(b, b)")
	add("initOwn", "lists.range(size(variables.initNames)).filter(i, !variables.initInjected[i])")
	add("lastOwnInit", "size(variables.initOwn) == 0 ? -1 : variables.initOwn[size(variables.initOwn) - 1]")
	add("volNames", "object.spec.?volumes.orValue([]).map(v, v.name)")
	add("secretNames", "object.spec.?imagePullSecrets.orValue([]).map(s, s.name)")
	for _, k := range []struct{ name, key string }{{"hashOld", sidecar.HashAnnotation}, {"hashWithoutImageOld", sidecar.HashWithoutImageAnnotation}} {
		// The members of a JSON hash annotation, each `"name":{...}` (entries hold no objects).
		add(k.name+"Raw", "variables.ann[?%s].orValue('')", Quote(k.key))
		add(k.name, "size(variables.%[1]sRaw) > 2 && variables.%[1]sRaw.startsWith('{') && variables.%[1]sRaw.endsWith('}') ? "+
			"variables.%[1]sRaw.substring(1, size(variables.%[1]sRaw) - 1).split('},').map(s, s.endsWith('}') ? s : s + '}') : []", k.name)
	}
	// sJ: the members of piece J apply to the pod but for their namespaceSelectors; m: they apply.
	inNamespace := make([]string, len(members))
	applies, sizes := make([]string, len(members)), make([]int, len(members))
	for k, m := range members {
		applies[k] = m.appliesCEL()
		sizes[k] = len(applies[k])
	}
	for j, p := range pieces(sizes, maxSelectsPiece) {
		add(fmt.Sprintf("s%d", j), "[%s]", strings.Join(applies[p.lo:p.hi], ",\n"))
		for k := p.lo; k < p.hi; k++ {
			inNamespace[k] = fmt.Sprintf("variables.s%d[%d]", j, k-p.lo)
			if m := members[k]; m.selNS != "" {
				inNamespace[k] += " && " + m.selNS
			}
		}
	}
	add("m", "variables.eligible ? [%s] : %s", strings.Join(inNamespace, ", "), "["+strings.TrimSuffix(strings.Repeat("false, ", len(members)), ", ")+"]")
	return vs
}

// appliesCEL: the member selects the pod, has not injected it, the pod's namespace is not handed
// off to the webhook, and the pod declares none of the sidecar names that leave it to the webhook. A name list is the right operand of in: CEL turns
// "x in <constant list>" into a set lookup.
func (m *Member) appliesCEL() string {
	terms := []string{"(" + m.sel + ")", fmt.Sprintf("!(%s in variables.injectedNames)", Quote(m.name))}
	if len(m.handoff) > 0 {
		terms = append(terms, fmt.Sprintf("!(request.namespace in %s)", StringList(m.handoff)))
	}
	if !m.deferNames.empty() {
		terms = append(terms, fmt.Sprintf("!variables.declared.exists(n, %s)", m.deferNames.has("n")))
	}
	if !m.deferInitNames.empty() {
		terms = append(terms, fmt.Sprintf("!variables.declaredInit.exists(n, %s)", m.deferInitNames.has("n")))
	}
	return strings.Join(terms, " && ")
}

// eligibleCEL: the pod is active (apps.PodActive, as the injector requires) and outside the
// excluded namespaces.
func eligibleCEL(excluded []string) string {
	active := "!has(object.metadata.deletionTimestamp) && !(object.?status.?phase.orValue('') in ['Succeeded', 'Failed'])"
	if len(excluded) == 0 {
		return active
	}
	return fmt.Sprintf("!(request.namespace in %s) && %s", StringList(excluded), active)
}

// outsideControlPlaneCEL: the pod's namespace is not labelled apps.ControlPlaneNamespaceLabel
// (any value), as OpenKruise's webhook requires. It reads namespaceObject, which kube-apiserver
// hands to a policy's variables and mutations (it looks the namespace up once per request for
// them) but not to its match conditions: the eligible match condition leaves it out, and a pod
// of such a namespace reaches the mutation, where m is all false and nothing is patched. A
// namespaceSelector would turn it away natively, at the cost of parsing it on every pod create
// (see matchConstraints).
func outsideControlPlaneCEL() string {
	return fmt.Sprintf("!(%s in namespaceObject.metadata.?labels.orValue({}))", Quote(apps.ControlPlaneNamespaceLabel))
}

// groupMatchConditions turn away, before the pod is converted for the mutation, a pod no member
// applies to: it is eligible, and some member selects it and has not injected it. Match
// conditions see no variables: l and injected are bound by iterating over a one-element list.
// They are left out when the objectSelector says it all (Objects with exact): kube-apiserver
// converts the pod for CEL once more for them, and again in its second pass over the admission
// chain; the mutation alone is idempotent (variables.m).
func groupMatchConditions(members []*Member, excluded []string) []admissionregistrationv1.MatchCondition {
	terms := make([]string, len(members))
	for k, m := range members {
		terms[k] = fmt.Sprintf("(%s && !(%s in injected))", m.selL, Quote(m.name))
	}
	selects := fmt.Sprintf("[object.metadata.?labels.orValue({})].exists(l, [object.metadata.?annotations[?%s].orValue('').split(',')].exists(injected,\n%s))",
		Quote(sidecar.InjectedListAnnotation), strings.Join(terms, " ||\n"))
	return []admissionregistrationv1.MatchCondition{
		{Name: "eligible", Expression: eligibleCEL(excluded)},
		{Name: "selects", Expression: selects},
	}
}

// chunk is the members of one mutation: members[lo:hi] of the policy, with variables suffixed c.
type chunk struct {
	members []*Member
	lo      int
	c       string
	// inserts are the expressions of its insert variables, the first nContainerInserts of them
	// container inserts, the others init container ones (insertPieces, computed once).
	inserts           []string
	nContainerInserts int
}

// chunks splits the members into mutations: the mutation's own operations (the volumes and
// secrets of its members, each with a comprehension-free but literal-holding operation) within
// maxPieceSize, and the constant lists of its hash annotation entries within maxHashList. The
// inserts are variables of their own and the other per-member values constant lists, so the
// members' count alone does not split a group (a group of one-container members is one mutation).
func chunks(members []*Member) []chunk {
	var out []chunk
	add := func(lo, hi int) {
		ch := chunk{members: members[lo:hi], lo: lo, c: fmt.Sprint(len(out))}
		ch.inserts, ch.nContainerInserts = ch.insertPieces()
		out = append(out, ch)
	}
	start, ops, hashes := 0, 0, 0
	for k, m := range members {
		o, h := m.mutationSize(), len(Quote(m.hashEntry))+len(Quote(m.hashEntryWithoutImage))
		if k > start && (ops+o > maxPieceSize || hashes+h > maxHashList) {
			add(start, k)
			start, ops, hashes = k, 0, 0
		}
		ops, hashes = ops+o, hashes+h
	}
	add(start, len(members))
	return out
}

// maxHashList bounds the hash annotation entries of a chunk's members (both annotations), each
// annotation's a constant list in one variable: within CEL's expression size limit.
const maxHashList = maxExpressionSize

// mutationSize estimates what the member adds to its chunk's mutation expression.
func (m *Member) mutationSize() int {
	n := 100
	for _, es := range [][]entry{m.volumes, m.secrets} {
		for _, e := range es {
			n += len(e.literal) + 200
		}
	}
	return n
}

// v names a chunk variable.
func (ch *chunk) v(name string) string { return "variables." + name + ch.c }

// applies is the CEL of member k (index in the chunk) applying.
func (ch *chunk) applies(k int) string { return fmt.Sprintf("variables.m[%d]", ch.lo+k) }

// appliesAt is the CEL of the member at index k (a CEL int expression) applying.
func (ch *chunk) appliesAt(k string) string {
	if ch.lo == 0 {
		return fmt.Sprintf("variables.m[%s]", k)
	}
	return fmt.Sprintf("variables.m[%d + %s]", ch.lo, k)
}

// variables are the chunk's own named expressions: the indexes (in the chunk) of the members that
// apply, per init container item whether its member applies, per volume and secret whether it is
// added, and the annotation values. Whatever is per member reads the applying members' indexes,
// a few for any pod, out of constant lists that kube-apiserver builds once per policy, so a
// create costs in proportion to the members that apply rather than to the chunk's.
func (ch *chunk) variables() []admissionregistrationv1.Variable {
	var vs []admissionregistrationv1.Variable
	add := func(name, format string, args ...any) {
		vs = append(vs, admissionregistrationv1.Variable{Name: name + ch.c, Expression: fmt.Sprintf(format, args...)})
	}
	add("on", "lists.range(%d).filter(k, %s)", len(ch.members), ch.appliesAt("k"))
	add("any", "size(%s) > 0", ch.v("on"))
	before, after := ch.initItems()
	add("ib", "%s", ch.itemFlags(before))
	add("ia", "%s", ch.itemFlags(after))
	add("volAdd", "%s", ch.addFlags(ch.keyed(func(m *Member) []entry { return m.volumes }), "variables.volNames"))
	add("secretAdd", "%s", ch.addFlags(ch.keyed(func(m *Member) []entry { return m.secrets }), "variables.secretNames"))
	add("injectedList", "(variables.injectedNames + %s).filter(n, n != '').distinct().sort().join(',')", ch.pick(false, func(m *Member) string { return m.name }))
	for _, h := range []struct{ name, old string }{{"hash", "hashOld"}, {"hashWithoutImage", "hashWithoutImageOld"}} {
		entryOf := func(m *Member) string { return m.hashEntry }
		if h.name == "hashWithoutImage" {
			entryOf = func(m *Member) string { return m.hashEntryWithoutImage }
		}
		key := func(m *Member) string { return `"` + m.name + `":{` }
		add(h.name+"New", "%s", ch.pick(true, entryOf))
		add(h.name+"Keys", "%s", ch.pick(true, key))
		add(h.name, "'{' + (variables.%s.filter(s, !%s.exists(k, s.startsWith(k))) + %s).sort().join(',') + '}'",
			h.old, ch.v(h.name+"Keys"), ch.v(h.name+"New"))
	}
	return append(vs, ch.insertVariables()...)
}

// pick is the CEL list of value(m) for the members that apply (and inject containers, when
// hashed: only those have hash annotation entries), in member order.
func (ch *chunk) pick(hashed bool, value func(*Member) string) string {
	values, some, all := make([]string, len(ch.members)), false, true
	for k, m := range ch.members {
		values[k] = "''"
		if !hashed || m.hashEntry != "" {
			values[k], some = Quote(value(m)), true
		} else {
			all = false
		}
	}
	if !some {
		return "[]"
	}
	out := fmt.Sprintf("%s.map(k, [%s][k])", ch.v("on"), strings.Join(values, ", "))
	if !all {
		out += ".filter(s, s != '')"
	}
	return out
}

// containersBefore is the CEL of the number of containers the applying members before member k
// insert (count(m): before or after the apps), or of all of them for k = len(ch.members).
func (ch *chunk) containersBefore(k int, count func(*Member) int) string {
	counts, first, same := make([]string, len(ch.members)), count(ch.members[0]), true
	for j, m := range ch.members {
		c := count(m)
		counts[j], same = fmt.Sprint(c), same && c == first
	}
	on := ch.v("on")
	if k < len(ch.members) {
		on = fmt.Sprintf("%s.filter(j, j < %d)", on, k)
	}
	switch {
	case k == 0 || same && first == 0:
		return "0"
	case same:
		return fmt.Sprintf("size(%s) * %d", on, first)
	}
	return fmt.Sprintf("%s.map(j, [%s][j]).sum()", on, strings.Join(counts, ", "))
}

// initItem is one init container of a member.
type initItem struct {
	entry
	k int // member index in the chunk
}

// initItems returns the chunk's Before and After init containers, each sorted by name (injected
// init containers form name-sorted runs).
func (ch *chunk) initItems() (before, after []initItem) {
	for k, m := range ch.members {
		for i, e := range m.initContainers {
			if i < m.nInitBefore {
				before = append(before, initItem{e, k})
			} else {
				after = append(after, initItem{e, k})
			}
		}
	}
	for _, l := range [][]initItem{before, after} {
		sort.SliceStable(l, func(i, j int) bool { return l[i].name < l[j].name })
	}
	return before, after
}

func (ch *chunk) itemFlags(items []initItem) string {
	terms := make([]string, len(items))
	for i, it := range items {
		terms[i] = fmt.Sprintf("%s ? 1 : 0", ch.applies(it.k))
	}
	return "[" + strings.Join(terms, ", ") + "]"
}

// keyedEntry is a volume or secret some members carry, with the literal of each carrier.
type keyedEntry struct {
	name     string
	carriers []int // member indexes in the chunk, in order
	literals []string
}

// keyed returns the distinct entries of the members, in order of first appearance.
func (ch *chunk) keyed(list func(*Member) []entry) []keyedEntry {
	var out []keyedEntry
	at := map[string]int{}
	for k, m := range ch.members {
		for _, e := range list(m) {
			i, ok := at[e.name]
			if !ok {
				i = len(out)
				at[e.name] = i
				out = append(out, keyedEntry{name: e.name})
			}
			out[i].carriers = append(out[i].carriers, k)
			out[i].literals = append(out[i].literals, e.literal)
		}
	}
	return out
}

// addFlags is, per entry, whether the pod lacks it (names is the CEL list of the pod's names) and
// a member carrying it applies.
func (ch *chunk) addFlags(es []keyedEntry, names string) string {
	terms := make([]string, len(es))
	for i, e := range es {
		any := make([]string, len(e.carriers))
		for j, k := range e.carriers {
			any[j] = ch.applies(k)
		}
		terms[i] = fmt.Sprintf("!(%s in %s) && (%s)", Quote(e.name), names, strings.Join(any, " || "))
	}
	return "[" + strings.Join(terms, ", ") + "]"
}

// expression is the chunk's JSONPatch expression: one list of operations per part, flattened, in
// an order that inserts each item at its final index. The inserts are the chunk's variables
// (insertVariables), turned into JSONPatch here.
func (ch *chunk) expression() string {
	var parts []string
	containers, inits := ch.insertNames()
	parts = append(parts, patchesOf(containers)...)
	if create := ch.initListOp(); create != "" {
		parts = append(parts, create)
	}
	parts = append(parts, patchesOf(inits)...)
	parts = append(parts, ch.appendOps("/spec/volumes", "object.spec.?volumes", "volAdd", ch.keyed(func(m *Member) []entry { return m.volumes }))...)
	parts = append(parts, ch.appendOps("/spec/imagePullSecrets", "object.spec.?imagePullSecrets", "secretAdd", ch.keyed(func(m *Member) []entry { return m.secrets }))...)
	parts = append(parts, ch.annotationOps())
	// A pod none of the chunk's members applies to (most pods with the group's key) skips every
	// insert variable.
	return fmt.Sprintf("!%s ? [] : [\n%s\n].flatten()", ch.v("any"), strings.Join(parts, ",\n"))
}

// patchesOf is the JSONPatch add operations of the insert variables named, in order (none for no
// variable).
func patchesOf(vars []string) []string {
	if len(vars) == 0 {
		return nil
	}
	return []string{"[" + strings.Join(vars, ", ") + "].flatten().map(p, JSONPatch{op: 'add', path: p.path, value: p.value})"}
}

// prefix is the CEL of the sum of the first n elements of chunk list variable name.
func (ch *chunk) prefix(name string, n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%s.slice(0, %d).sum()", ch.v(name), n)
}

// Inserts are variables of a few member parts or init containers each: CEL's type checker spends
// time in the square of an expression's comprehensions and literals (see maxPieceSize), and
// kube-apiserver compiles each variable on its own, so a chunk's mutation costs it time in
// proportion to its members (a variable is evaluated once, when the mutation reads it).

// insertVariables are the chunk's inserts: the container inserts, then the init container ones,
// consecutive inserts of each kind sharing a variable up to maxInsertPiece characters (each
// variable costs kube-apiserver a little to evaluate, each character of one expression a little
// more to compile).
func (ch *chunk) insertVariables() []admissionregistrationv1.Variable {
	vs := make([]admissionregistrationv1.Variable, len(ch.inserts))
	for i, e := range ch.inserts {
		vs[i] = admissionregistrationv1.Variable{Name: ch.insertName(i), Expression: e}
	}
	return vs
}

// maxInsertPiece bounds an insert variable (see insertVariables).
const maxInsertPiece = 2_000

// insertPieces are the expressions of the insert variables, and how many of them (the first)
// hold container inserts; the others hold init container ones.
func (ch *chunk) insertPieces() (exprs []string, containers int) {
	join := func(inserts []string) []string {
		if len(inserts) == 0 {
			return nil
		}
		sizes := make([]int, len(inserts))
		for i, e := range inserts {
			sizes[i] = len(e)
		}
		var out []string
		for _, p := range pieces(sizes, maxInsertPiece) {
			out = append(out, "("+strings.Join(inserts[p.lo:p.hi], ") + (")+")")
		}
		return out
	}
	c := join(ch.containerInserts())
	return append(c, join(ch.initContainerInserts())...), len(c)
}

// insertName names the chunk's i-th insert variable.
func (ch *chunk) insertName(i int) string { return fmt.Sprintf("ins%s_%d", ch.c, i) }

// insertNames are the CEL references of the container insert variables and of the init container
// ones.
func (ch *chunk) insertNames() (containers, inits []string) {
	for i := range ch.inserts {
		if ref := "variables." + ch.insertName(i); i < ch.nContainerInserts {
			containers = append(containers, ref)
		} else {
			inits = append(inits, ref)
		}
	}
	return containers, inits
}

// containerInserts inserts, member by member, the Before sidecars behind the Before sidecars of
// SidecarSets sorting earlier, then the After ones in front of the After sidecars of SidecarSets
// sorting later; each index counts what the chunk's earlier members inserted in front of it.
func (ch *chunk) containerInserts() []string {
	var before, after []string
	for k, m := range ch.members {
		if m.nBefore > 0 {
			at := firstOr(fmt.Sprintf("lists.range(size(variables.names)).filter(i, !(variables.injected[i] && %s))", m.earlierBefore.has("variables.names[i]")), "size(variables.names)",
				"variables.anyInjected", "0")
			before = append(before, ch.insert(k, "/spec/containers/", m.containers[:m.nBefore], at+" + "+ch.containersBefore(k, func(m *Member) int { return m.nBefore })))
		}
		if len(m.containers) > m.nBefore {
			at := firstOr(fmt.Sprintf("lists.range(size(variables.names)).filter(i, i > variables.lastApp && variables.injected[i] && %s)", m.laterAfter.has("variables.names[i]")), "size(variables.names)",
				"variables.anyInjected", "size(variables.names)")
			after = append(after, ch.insert(k, "/spec/containers/", m.containers[m.nBefore:], at+" + "+ch.containersBefore(len(ch.members), func(m *Member) int { return m.nBefore })+" + "+ch.containersBefore(k, func(m *Member) int { return len(m.containers) - m.nBefore })))
		}
	}
	return append(before, after...)
}

// insert is the list of es, as path and value, at consecutive indexes from at when member k
// applies (empty otherwise).
func (ch *chunk) insert(k int, path string, es []entry, at string) string {
	return fmt.Sprintf("%s ? %s.transformList(c, x, {'path': dyn(%s + string(%s + c)), 'value': dyn(x)}) : []",
		ch.applies(k), listOf(es), Quote(path), at)
}

// initListOp creates the init container list when the pod has none and an init container is
// inserted ("" when the chunk has no init container).
func (ch *chunk) initListOp() string {
	before, after := ch.initItems()
	if len(before)+len(after) == 0 {
		return ""
	}
	return fmt.Sprintf("size(variables.inits) == 0 && %s.sum() + %s.sum() > 0 ? [JSONPatch{op: 'add', path: '/spec/initContainers', value: []}] : []", ch.v("ib"), ch.v("ia"))
}

// initContainerInserts inserts the Before init containers into the run in front of the pod's own
// and the After ones into the run behind them, each at its name's place.
func (ch *chunk) initContainerInserts() []string {
	before, after := ch.initItems()
	var out []string
	for i, it := range before {
		bi := ch.members[it.k].beforeInit.has("variables.initNames[i]")
		at := firstOr(fmt.Sprintf("lists.range(size(variables.initNames)).filter(i, !(variables.initInjected[i] && %s && variables.initNames[i] < %s))", bi, Quote(it.name)), "size(variables.initNames)",
			"variables.anyInitInjected", "0")
		out = append(out, ch.insert(it.k, "/spec/initContainers/", []entry{it.entry}, at+" + "+ch.prefix("ib", i)))
	}
	for i, it := range after {
		bi := ch.members[it.k].beforeInit.has("variables.initNames[i]")
		at := firstOr(fmt.Sprintf("lists.range(size(variables.initNames)).filter(i, i > variables.lastOwnInit && variables.initInjected[i] && !(%s) && variables.initNames[i] > %s)", bi, Quote(it.name)), "size(variables.initNames)",
			"variables.anyInitInjected", "size(variables.initNames)")
		out = append(out, ch.insert(it.k, "/spec/initContainers/", []entry{it.entry}, at+" + "+ch.v("ib")+".sum() + "+ch.prefix("ia", i)))
	}
	return out
}

// appendOps adds the entries flagged in variable flags, creating the list when the pod has none;
// an entry several members carry takes the literal of the first that applies.
func (ch *chunk) appendOps(path, field, flags string, es []keyedEntry) []string {
	if len(es) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("!%s.hasValue() && %s.exists(b, b) ? [JSONPatch{op: 'add', path: %s, value: []}] : []", field, ch.v(flags), Quote(path))}
	for i, e := range es {
		value := e.literals[len(e.literals)-1]
		for j := len(e.literals) - 2; j >= 0; j-- {
			if e.literals[j] != value {
				value = fmt.Sprintf("%s ? %s : %s", ch.applies(e.carriers[j]), e.literals[j], value)
			}
		}
		out = append(out, fmt.Sprintf("%s[%d] ? [JSONPatch{op: 'add', path: %s, value: %s}] : []", ch.v(flags), i, Quote(path+"/-"), value))
	}
	return out
}

// annotationOps writes the injected list and, when an applying member injects containers, the
// hash annotations; it creates the annotation map when the pod has none.
func (ch *chunk) annotationOps() string {
	il, h, hw := Quote(sidecar.InjectedListAnnotation), Quote(sidecar.HashAnnotation), Quote(sidecar.HashWithoutImageAnnotation)
	ptr := func(k string) string { return Quote("/metadata/annotations/" + escapePointer(k)) }
	hasHash := fmt.Sprintf("size(%s) > 0", ch.v("hashNew"))
	each := fmt.Sprintf("[JSONPatch{op: 'add', path: %s, value: %s}] + (%s ? [JSONPatch{op: 'add', path: %s, value: %s}, JSONPatch{op: 'add', path: %s, value: %s}] : [])",
		ptr(sidecar.InjectedListAnnotation), ch.v("injectedList"), hasHash, ptr(sidecar.HashAnnotation), ch.v("hash"), ptr(sidecar.HashWithoutImageAnnotation), ch.v("hashWithoutImage"))
	whole := fmt.Sprintf("[JSONPatch{op: 'add', path: '/metadata/annotations', value: %s ? {%s: %s, %s: %s, %s: %s} : {%s: %s}}]",
		hasHash, il, ch.v("injectedList"), h, ch.v("hash"), hw, ch.v("hashWithoutImage"), il, ch.v("injectedList"))
	return fmt.Sprintf("!%s ? [] : (has(object.metadata.annotations) ? %s : %s)", ch.v("any"), each, whole)
}

// MaxMembers is the most SidecarSets one group policy injects.
const MaxMembers = 256

// MaxPolicySize bounds a group policy's CEL (estimated): kube-apiserver compiles and cost-checks
// every expression of a policy when it admits the policy and again when it loads it, and both
// grow with the policy's size (about 4 to 6 µs a character on one core of a small machine, with
// expressions of at most maxPieceSize). At this size kube-apiserver admits a policy in well under a
// second; more members make another policy.
const MaxPolicySize = 100_000

// maxSelectsSize bounds the selects match condition, which joins every member in one expression
// (match conditions see no variables): its type-checking time grows with the square of its size.
const maxSelectsSize = 32_000

// Group is one group policy being filled: its members, sorted by name, within the bounds of what
// kube-apiserver compiles quickly (see Fits).
type Group struct {
	// Name names the policy and its binding.
	Name string
	// Key is the label key the members' selectors require.
	Key     string
	members []*Member // sorted by name
	sets    []*v1alpha1.SidecarSet
	// varSize and condSize are the sizes of the policy-wide expressions that join every member
	// (the variable m, the selects match condition); size is the whole policy's (estimated).
	varSize, condSize, size int
}

// sizes returns what m adds to the policy-wide expressions and to the whole policy.
func (m *Member) sizes() (vars, cond, total int) {
	vars, cond = len(m.selNS)+32, len(m.selL)+len(m.name)+32
	return vars, cond, vars + cond + len(m.appliesCEL()) + m.size()
}

// Fits reports whether the group has room for m: the policy within MaxPolicySize, each
// policy-wide expression within its bound, and the members within MaxMembers.
func (g *Group) Fits(m *Member) bool {
	v, c, n := m.sizes()
	return len(g.members) < MaxMembers && g.varSize+v <= maxExpressionSize && g.condSize+c <= maxSelectsSize &&
		g.size+n <= MaxPolicySize
}

// Add makes ss, compiled as m, a member.
func (g *Group) Add(ss *v1alpha1.SidecarSet, m *Member) {
	v, c, n := m.sizes()
	g.varSize += v
	g.condSize += c
	g.size += n
	g.members = append(g.members, m)
	g.sets = append(g.sets, ss)
}

// Sets returns the members' SidecarSets, in the order added (by name).
func (g *Group) Sets() []*v1alpha1.SidecarSet { return g.sets }

// Objects renders the group's policy and binding: the policy records its members in the
// apps.SidecarSetsAnnotation members, its objectSelector asks for the group's key with one of
// values (nil: any value), and it has match conditions unless exact (its objectSelector selects
// only pods some member selects); excluded namespaces are never injected.
func (g *Group) Objects(members string, values []string, exact bool, excluded []string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	meta := metav1.ObjectMeta{
		Name:        g.Name,
		Labels:      map[string]string{apps.ManagedByLabel: apps.ManagedByValue},
		Annotations: map[string]string{apps.SidecarSetsAnnotation: members},
	}
	vars := groupVariables(g.members, excluded)
	var conditions []admissionregistrationv1.MatchCondition
	if !exact {
		conditions = groupMatchConditions(g.members, excluded)
	}
	var mutations []admissionregistrationv1.Mutation
	for _, ch := range chunks(g.members) {
		vars = append(vars, ch.variables()...)
		mutations = append(mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: ch.expression()}})
	}
	fail := admissionregistrationv1.Fail
	// Never reinvoked: kube-apiserver reinvokes an IfNeeded policy that mutated the pod even when
	// nothing after it changed the pod, and the second run converts, patches and decodes the pod
	// again to add nothing (the mutation is idempotent). Admission policies run before every
	// webhook, and a webhook or policy that runs later sees the sidecars already in the pod.
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   matchConstraints(g.Key, values),
			MatchConditions:    conditions,
			Variables:          vars,
			Mutations:          mutations,
			FailurePolicy:      &fail,
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: g.Name},
	}
	return policy, binding
}

// MaxMemberSize bounds one SidecarSet's CEL (estimated): its mutation is one expression, whose
// type-checking time grows with the square of its size.
const MaxMemberSize = 96_000

// TooLarge returns the characters of CEL the member needs (estimated), and whether they are more
// than kube-apiserver compiles quickly for one SidecarSet (MaxMemberSize), or its selector more
// than the selects match condition holds.
func (m *Member) TooLarge() (size int, tooLarge bool) {
	_, c, n := m.sizes()
	return n, n > MaxMemberSize || c > maxSelectsSize
}
