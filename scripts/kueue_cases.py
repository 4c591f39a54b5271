#!/usr/bin/env python3
"""Regenerate crates/sched/tests/kueue/*_test.yaml from a Kueue git directory:

    python3 scripts/kueue_cases.py /path/to/kueue/.git

Reads Kueue's Go test files at the pinned commit, takes their test-case literals apart
(composite literals, calls, builder chains) and writes the facts as YAML. `difference:` lines
come from crates/sched/tests/kueue/differences.yaml. Needs PyYAML."""
import json, os, re, subprocess, sys

import yaml

TOK = re.compile(r'''
 (?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|
 (?P<str>"(?:\\.|[^"\\])*")|(?P<raw>`[^`]*`)|(?P<rune>'(?:\\.|[^'\\])')|
 (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|
 (?P<op>:=|\.\.\.|&&|\|\||==|!=|<=|>=|<<|>>|[{}()\[\],.:;&*+\-/%<>=!|^])''', re.S | re.X)

def tokenize(s):
    out = []
    pos = 0
    while pos < len(s):
        m = TOK.match(s, pos)
        if not m:
            raise SyntaxError(f"bad char at {pos}: {s[pos:pos+20]!r}")
        pos = m.end()
        k = m.lastgroup
        if k in ('ws', 'lc', 'bc'):
            continue
        v = m.group()
        if k == 'str':
            v = json.loads(v)
            k = 'str'
        elif k == 'raw':
            v = v[1:-1]
            k = 'str'
        out.append((k, v))
    out.append(('eof', None))
    return out

class Unsupported(Exception):
    pass

class P:
    def __init__(self, toks, env):
        self.t = toks
        self.i = 0
        self.env = env

    def peek(self, o=0):
        return self.t[self.i + o]

    def next(self):
        x = self.t[self.i]
        self.i += 1
        return x

    def expect(self, v):
        k, x = self.next()
        if x != v:
            raise SyntaxError(f"expected {v} got {x} at {self.i}: {self.ctx()}")

    def ctx(self):
        return ' '.join(str(v) for _, v in self.t[max(0, self.i - 8):self.i + 8])

    def skip_type(self):
        # a type: []T, map[K]V, *T, pkg.T, T, T[...], func(...) ...
        k, v = self.peek()
        if v == '[':
            self.next()
            if self.peek()[1] != ']':
                self.expr()
            self.expect(']')
            return self.skip_type()
        if v == '*':
            self.next()
            return self.skip_type()
        if v == 'map':
            self.next(); self.expect('['); self.skip_type(); self.expect(']')
            return self.skip_type()
        if v == 'struct':
            self.next(); self.skip_block(); return 'struct'
        if k == 'id':
            self.next()
            name = v
            while self.peek()[1] == '.':
                self.next(); name += '.' + self.next()[1]
            return name
        raise SyntaxError(f"type? {v} {self.ctx()}")

    def skip_block(self):
        self.expect('{')
        depth = 1
        while depth:
            k, v = self.next()
            if v == '{': depth += 1
            elif v == '}': depth -= 1
            elif k == 'eof': raise SyntaxError('eof')

    def composite(self, typ):
        self.expect('{')
        items = []
        keyed = {}
        while self.peek()[1] != '}':
            if self.peek()[0] == 'id' and self.peek(1)[1] == ':':
                key = self.next()[1]; self.next()
                keyed[key] = self.composite(None) if self.peek()[1] == '{' else self.expr()
                if self.peek()[1] == ',':
                    self.next()
                continue
            if self.peek()[1] == '{':
                val = self.composite(None)
            else:
                val = self.expr()
            if self.peek()[1] == ':':
                self.next()
                if self.peek()[1] == '{':
                    v2 = self.composite(None)
                else:
                    v2 = self.expr()
                key = val
                if isinstance(key, tuple) and key[0] == 'name':
                    key = key[1]
                keyed[key if isinstance(key, str) else json.dumps(key)] = v2
            else:
                items.append(val)
            if self.peek()[1] == ',':
                self.next()
        self.expect('}')
        if keyed and items:
            raise SyntaxError('mixed literal')
        if keyed:
            return {'__type': typ, **keyed} if typ else keyed
        return items

    def expr(self):
        left = self.unary()
        while self.peek()[1] in ('+', '-', '*', '/'):
            op = self.next()[1]
            right = self.unary()
            if op == '+': left = left + right
            elif op == '-': left = left - right
            elif op == '*': left = left * right
            else: left = left // right
        return left

    def unary(self):
        k, v = self.peek()
        if v in ('&', '*'):
            self.next()
            return self.unary()
        if v == '-':
            self.next()
            return -self.unary()
        return self.postfix(self.primary())

    def primary(self):
        k, v = self.peek()
        if k == 'str':
            self.next(); return v
        if k == 'num':
            self.next(); return float(v) if '.' in v else int(v)
        if v == '(':
            self.next(); x = self.expr(); self.expect(')'); return x
        if v == '[' or v == 'map':
            typ = self.skip_type()
            return self.composite(typ)
        if v == 'func':
            raise Unsupported('function literal')
        if k == 'id':
            self.next()
            name = v
            if name in ('true', 'false'):
                return name == 'true'
            if name == 'nil':
                return None
            # qualified name
            while self.peek()[1] == '.' and self.peek(1)[0] == 'id':
                self.next(); name += '.' + self.next()[1]
            # generic instantiation like ptr.To[int32]
            if self.peek()[1] == '[' and name in ('ptr.To',):
                self.next(); self.skip_type(); self.expect(']')
            if self.peek()[1] == '{' and (name[0].isupper() or '.' in name or name in LOCAL_TYPES) and name not in self.env:
                return self.composite(name)
            if self.peek()[1] == '(':
                return ('call', name, self.args())
            return self.lookup(name)
        raise SyntaxError(f"primary? {v} {self.ctx()}")

    def args(self):
        self.expect('(')
        out = []
        while self.peek()[1] != ')':
            if self.peek()[1] == '{':
                out.append(self.composite(None))
            else:
                out.append(self.expr())
            if self.peek()[1] == '...':
                self.next()
                out[-1] = ('spread', out[-1])
            if self.peek()[1] == ',':
                self.next()
        self.expect(')')
        return out

    def postfix(self, x):
        while True:
            k, v = self.peek()
            if v == '.' and self.peek(1)[0] == 'id':
                self.next(); m = self.next()[1]
                if self.peek()[1] == '(':
                    x = ('method', x, m, self.args())
                else:
                    x = ('field', x, m)
            elif v == '[':
                self.next(); idx = self.expr(); self.expect(']')
                x = ('index', x, idx)
            else:
                return x

    def lookup(self, name):
        if name in self.env:
            return self.env[name]
        head, _, rest = name.partition('.')
        if rest and head in self.env:
            return ('field', self.env[head], rest)
        if name in CONSTS:
            return CONSTS[name]
        return ('name', name)

LOCAL_TYPES = {'domain', 'domainState', 'testDomainSpec'}

CONSTS = {
    'corev1.LabelHostname': 'kubernetes.io/hostname',
    'corev1.ResourceCPU': 'cpu', 'corev1.ResourceMemory': 'memory', 'corev1.ResourcePods': 'pods',
    'corev1.TaintEffectNoSchedule': 'NoSchedule', 'corev1.TaintEffectNoExecute': 'NoExecute',
    'corev1.TaintEffectPreferNoSchedule': 'PreferNoSchedule',
    'corev1.TolerationOpExists': 'Exists', 'corev1.TolerationOpEqual': 'Equal',
    'corev1.NodeSelectorOpIn': 'In', 'corev1.NodeSelectorOpNotIn': 'NotIn',
    'corev1.NodeSelectorOpExists': 'Exists', 'corev1.NodeSelectorOpDoesNotExist': 'DoesNotExist',
    'corev1.NodeSelectorOpGt': 'Gt', 'corev1.NodeSelectorOpLt': 'Lt',
    'corev1.PodRunning': 'Running', 'corev1.PodPending': 'Pending', 'corev1.PodSucceeded': 'Succeeded',
    'corev1.PodFailed': 'Failed',
    'corev1.NodeReady': 'Ready', 'corev1.ConditionTrue': 'True', 'corev1.ConditionFalse': 'False',
    'corev1.NodeNetworkUnavailable': 'NetworkUnavailable',
    'time.Second': 1, 'time.Minute': 60,
    'kueue.DelayedTopologyRequestStatePending': 'Pending', 'kueue.DelayedTopologyRequestStateReady': 'Ready',
    'kueue.CheckStatePending': 'Pending', 'kueue.CheckStateReady': 'Ready',
    'utiltesting.Gi': 1024**3, 'utiltesting.Mi': 1024**2,
}

def parse_top(src, env):
    """Top-level statements of a function body: `const (...)`, `x := expr`, until `cases :=`."""
    toks = tokenize(src)
    p = P(toks, env)
    while p.peek()[0] != 'eof':
        k, v = p.peek()
        if v == 'const':
            p.next()
            if p.peek()[1] == '(':
                p.next()
                while p.peek()[1] != ')':
                    n = p.next()[1]
                    if p.peek()[1] != '=':
                        p.skip_type()
                    p.expect('=')
                    env[n] = p.expr()
                p.next()
            else:
                n = p.next()[1]; p.expect('='); env[n] = p.expr()
            continue
        if k == 'id' and p.peek(1)[1] == ':=':
            n = p.next()[1]; p.next()
            if n in ('cases', 'testCases'):
                p.skip_type()
                return p, n
            start = p.i
            try:
                env[n] = p.expr()
            except (Unsupported, SyntaxError) as e:
                env[n] = ('unsupported', str(e))
                # skip to next line-level statement: crude: find next "id :=" at depth 0
                p.i = start
                skip_stmt(p)
            continue
        p.next()
    return p, None

def skip_stmt(p):
    depth = 0
    while True:
        k, v = p.next()
        if v in '({[': depth += 1
        elif v in ')}]': depth -= 1
        if depth == 0 and p.peek(1)[1] == ':=' and p.peek()[0] == 'id':
            return
        if k == 'eof':
            return

def cases_map(p):
    """Parse `{ "name": {...}, ... }` one case at a time, tolerating failures."""
    p.expect('{')
    out = []
    while p.peek()[1] != '}':
        k, name = p.next()
        assert k == 'str', (k, name, p.ctx())
        p.expect(':')
        start = p.i
        try:
            val = p.composite(None)
            out.append((name, val, None))
        except (Unsupported, SyntaxError) as e:
            p.i = start
            p.skip_block()
            out.append((name, None, str(e)))
        if p.peek()[1] == ',':
            p.next()
    return out

def ev(x):
    """Evaluate builder chains and calls into data."""
    if isinstance(x, list):
        return [ev(i) for i in x]
    if isinstance(x, dict):
        return {k: ev(v) for k, v in x.items()}
    if not isinstance(x, tuple):
        return x
    tag = x[0]
    if tag == 'call':
        _, name, args = x
        a = [ev(i) for i in args]
        if name == 'new': return a[0]
        if name == 'ptr.To': return a[0]
        if name == 'resource.MustParse': return a[0]
        if name in ('corev1.ResourceName', 'kueue.TopologyReference', 'kueue.PodSetReference',
                    'kueue.NewPodSetReference', 'string', 'int32', 'int64'):
            return a[0]
        if name == 'testingnode.MakeNode':
            return {'__node': True, 'name': a[0], 'labels': {}, 'allocatable': {}, 'ready': None,
                    'unschedulable': False, 'taints': []}
        if name == 'testingpod.MakePod':
            return {'__pod': True, 'name': a[0], 'node': None, 'phase': None, 'requests': {}}
        if name == 'tas.V1Beta2From':
            return a[0]
        if name == 'utiltestingapi.MakeTopologyAssignment':
            return {'Levels': a[0], 'Domains': []}
        if name == 'resources.NewRequestsFromMap':
            return a[0]
        if name == 'utiltesting.MakePreferredSchedulingTerms': return {'__pref': []}
        if name == 'utiltesting.MakeNodeSelectorTerms': return {'__terms': []}
        if name == 'append':
            out = list(a[0])
            for raw, v in zip(args[1:], a[1:]):
                if isinstance(raw, tuple) and raw[0] == 'spread':
                    out.extend(v)
                else:
                    out.append(v)
            return out
        if name == 'fmt.Sprintf':
            raise Unsupported('Sprintf')
        raise Unsupported(f'call {name}')
    if tag == 'method':
        _, recv, m, args = x
        r = ev(recv)
        a = [ev(i) for i in args]
        if isinstance(r, dict) and r.get('__node'):
            if m == 'Label': r['labels'][a[0]] = a[1]
            elif m == 'StatusAllocatable': r['allocatable'].update(a[0])
            elif m == 'Ready': r['ready'] = True
            elif m == 'NotReady': r['ready'] = False
            elif m == 'Unschedulable': r['unschedulable'] = True
            elif m == 'Taints': r['taints'].extend(a)
            elif m == 'StatusConditions': r['conditions'] = a
            elif m == 'Obj': pass
            else: raise Unsupported(f'node.{m}')
            return r
        if isinstance(r, dict) and r.get('__pod'):
            if m == 'NodeName': r['node'] = a[0]
            elif m == 'StatusPhase': r['phase'] = a[0]
            elif m == 'Request': r['requests'][a[0]] = a[1]
            elif m == 'Obj': pass
            else: raise Unsupported(f'pod.{m}')
            return r
        if isinstance(r, dict) and '__pref' in r:
            if m == 'Term': r['__pref'].append({'weight': a[0], 'key': a[1], 'operator': a[2], 'values': list(a[3:])}); return r
            if m == 'Obj': return r['__pref']
        if isinstance(r, dict) and '__terms' in r:
            if m == 'Term': r['__terms'].append({'match_expressions': [{'key': a[0], 'operator': a[1], 'values': list(a[2:])}]}); return r
            if m == 'Obj': return r['__terms']
        if isinstance(r, dict) and 'Domains' in r and m in ('Domain', 'Obj'):
            if m == 'Domain': r['Domains'].append(a[0])
            return r
        raise Unsupported(f'method {m}')
    if tag == 'spread':
        return ev(x[1])
    if tag == 'field':
        r = ev(x[1])
        if isinstance(r, dict) and 'Domains' in r and x[2] == 'TopologyAssignment': return r
        raise Unsupported(f'field {x[2]}')
    if tag == 'name':
        raise Unsupported(f'name {x[1]}')
    if tag == 'unsupported':
        raise Unsupported(x[1])
    raise Unsupported(str(tag))

COMMIT = 'ff69552e79ad21652c36caa97038382e55625cf7'

def node_out(n):
    o = {'name': n['name'], 'labels': dict(n['labels']), 'allocatable': {k: str(v) for k, v in n['allocatable'].items()}}
    if n['ready'] is False: o['ready'] = False
    if n['ready'] is None: o['ready'] = False  # builder default: no Ready condition
    if n.get('conditions'):
        o['conditions'] = [f"{c['Type']}={c['Status']}" for c in n['conditions']]
    if n['unschedulable']: o['unschedulable'] = True
    if n['taints']:
        o['taints'] = [{'key': t['Key'], 'value': t.get('Value', ''), 'effect': t['Effect']} for t in n['taints']]
    return o

def tol_out(t):
    o = {}
    if 'Key' in t: o['key'] = t['Key']
    o['operator'] = t.get('Operator', 'Equal')
    if 'Value' in t: o['value'] = t['Value']
    if 'Effect' in t: o['effect'] = t['Effect']
    return o

def ta_out(ta):
    return {'levels': list(ta['Levels']), 'domains': [{'values': list(d['Values']), 'count': d['Count']} for d in ta['Domains']]}

KNOWN_PS = {'podSetName', 'topologyRequest', 'requests', 'count', 'tolerations', 'nodeSelector',
            'nodeAffinity', 'podSetGroupName', 'wantAssignment', 'wantReason'}

def podset_out(ps, i):
    extra = set(ps) - KNOWN_PS
    if extra:
        raise Unsupported(f'pod set fields {sorted(extra)}')
    o = {'name': ps.get('podSetName') or f'ps{i}', 'count': ps['count'], 'requests': dict(ps.get('requests') or {})}
    tr = ps.get('topologyRequest')
    if tr is None:
        o['implied'] = True
    else:
        tr = {k: v for k, v in tr.items() if k != '__type'}
        if 'Required' in tr: o['required'] = tr.pop('Required')
        if 'Preferred' in tr: o['preferred'] = tr.pop('Preferred')
        if 'Unconstrained' in tr: o['unconstrained'] = tr.pop('Unconstrained')
        if 'PodSetSliceRequiredTopology' in tr: o['slice_level'] = tr.pop('PodSetSliceRequiredTopology')
        if 'PodSetSliceSize' in tr: o['slice_size'] = tr.pop('PodSetSliceSize')
        if 'PodsetSliceRequiredTopologyConstraints' in tr:
            o['slice_layers'] = [{'level': c['Topology'], 'size': c['Size']} for c in tr.pop('PodsetSliceRequiredTopologyConstraints')]
        if 'PodSetGroupName' in tr: o['group'] = tr.pop('PodSetGroupName')
        if tr:
            raise Unsupported(f'topology request fields {sorted(tr)}')
    if ps.get('podSetGroupName'): o['group'] = ps['podSetGroupName']
    if ps.get('nodeSelector'): o['node_selector'] = dict(ps['nodeSelector'])
    if ps.get('tolerations'): o['tolerations'] = [tol_out(t) for t in ps['tolerations']]
    na = ps.get('nodeAffinity')
    if na:
        req = na.get('RequiredDuringSchedulingIgnoredDuringExecution')
        if req:
            o['affinity_required'] = req['NodeSelectorTerms']
        pref = na.get('PreferredDuringSchedulingIgnoredDuringExecution')
        if pref:
            o['affinity_preferred'] = pref
    if ps.get('wantAssignment'):
        o['want'] = ta_out(ps['wantAssignment'])
    if ps.get('wantReason'):
        r = ps['wantReason']
        o['want_fail'] = ('no_fit' if ('allows to fit only' in r or "doesn't allow to fit" in r)
                          else 'no_domains' if 'no topology domains at level' in r else 'invalid_request')
        o['want_reason'] = r
    if not ps.get('wantAssignment') and not ps.get('wantReason'):
        o['want'] = None
    return o

KNOWN_CASE = {'featureGates', 'nodes', 'pods', 'levels', 'nodeLabels', 'podSets'}

def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != '__type'}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x

def case_out(name, c):
    c = strip(c)
    extra = set(c) - KNOWN_CASE
    if extra:
        raise Unsupported(f'case fields {sorted(extra)}')
    o = {'name': name}
    gates = c.get('featureGates') or {}
    on = sorted(k.split('.')[-1] for k, v in gates.items() if v)
    off = sorted(k.split('.')[-1] for k, v in gates.items() if not v)
    if on: o['gates_on'] = on
    if off: o['gates_off'] = off
    o['levels'] = list(c['levels'])
    if c.get('nodeLabels'): o['flavor_node_labels'] = dict(c['nodeLabels'])
    o['nodes'] = [node_out(n) for n in c['nodes']]
    if c.get('pods'):
        o['pods'] = [{'name': p['name'], 'node': p['node'], 'phase': p['phase'],
                      'requests': {k: str(v) for k, v in p['requests'].items()}} for p in c['pods']]
    o['pod_sets'] = [podset_out(ps, i) for i, ps in enumerate(c['podSets'])]
    return o

def run(src, func, out, skip_reasons):
    head = f'func {func}(t *testing.T) {{'
    a = src.index(head) + len(head)
    env = {}
    p, n = parse_top(src[a:], env)
    cases = cases_map(p)
    good, bad = [], []
    for name, val, err in cases:
        if name in skip_reasons:
            bad.append({'name': name, 'reason': skip_reasons[name]})
            continue
        if err is None:
            try:
                good.append(case_out(name, ev(val)))
                continue
            except Unsupported as e:
                err = str(e)
        bad.append({'name': name, 'reason': 'CONVERTER: ' + err})
    return good, bad

def gb200_case():
    racks = [("dc0", "aizone0", "block0", "r0"), ("dc0", "aizone0", "block0", "r1"),
             ("dc0", "aizone0", "block1", "r2"), ("dc0", "aizone0", "block1", "r3"),
             ("dc0", "aizone1", "block2", "r4"), ("dc0", "aizone1", "block2", "r5"),
             ("dc0", "aizone1", "block3", "r6"), ("dc0", "aizone1", "block3", "r7")]
    nodes = []
    for dc, az, block, rack in racks:
        for i in range(18):
            nodes.append({'__node': True, 'name': f"{block}-{rack}-{az}-n{i}",
                          'labels': {'cloud.com/datacenter': dc, 'cloud.com/aizone': az,
                                     'cloud.com/topology-block': block, 'cloud.com/topology-rack': rack},
                          'allocatable': {'nvidia.com/gpu': '2', 'pods': '110'}, 'ready': True,
                          'unschedulable': False, 'taints': []})
    return nodes

NOT_PORTED = {
    'node replacement skipped for single-Pod-owned workload; gate on': 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow',
    'node replaced for Job-owned workload; gate on': 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow',
    'node replaced for pod-group workload with two Pod owners; gate on': 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow',
    'node replaced for size-1 pod-group workload (is-group-workload annotation); gate on': 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow',
    'node replaced for single-Pod-owned workload; gate off': 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow',
    'sibling-flavor usage on the shared hostname reduces remaining capacity': 'usage by another ResourceFlavor on the same node (TASHandleOverlappingFlavors): railyard has one flavor per cluster',
    'non-hostname-leaf topology: prior c.usage must be applied even when aggregatedDomainUsages is non-nil empty': 'usage recorded per rack domain without nodes (flavor cache bookkeeping): railyard keeps usage per node',
}
ELASTIC = 'resizes an admitted elastic workload from its previous assignment (ElasticJobsViaWorkloadSlicesWithTAS): railyard places whole jobs'

def sort_cases(src, func, with_leader):
    head = f'func {func}(t *testing.T) {{'
    a = src.index(head) + len(head)
    p, _ = parse_top(src[a:], {})
    out, bad = [], []
    for name, val, err in cases_map(p):
        if err is not None:
            bad.append({'name': name, 'test': func, 'reason': 'CONVERTER: ' + err})
            continue
        c = strip(ev(val))
        doms = []
        for spec in c['domains']:
            d, st = spec['domain'], spec.get('state') or {}
            doms.append({'id': d['id'], 'values': list(d['levelValues']),
                         **{k: st.get(k, 0) for k in ('sliceCount', 'podCount', 'sliceCountWithLeader',
                                                       'podCountWithLeader', 'leaderCount', 'affinityScore')}})
        case = {'name': name, 'test': func, 'with_leader': with_leader,
                'unconstrained': bool(c.get('unconstrained', False)), 'domains': doms,
                'want_order': list(c['wantOrder'])}
        if c.get('enableTASPreferredSchedulingAffinity'):
            case['gates_on'] = ['TASRespectNodeAffinityPreferred']
        out.append(case)
    return out, bad

def snapshot_file(src, diffs):
    good, bad = [], []
    for func, wl in [('TestSortedDomains', False), ('TestSortedDomainsWithLeader', True)]:
        g, b = sort_cases(src, func, wl)
        good += g
        bad += b
    for case in good:
        key = case['test'] + ' / ' + case['name']
        if key in diffs:
            case['difference'] = diffs[key]
    reasons = {
        'TestFreeCapacityPerDomain': 'serializes free capacity per domain for a log line: no placement',
        'TestIsTopologyAssignmentStale': 'checks an admitted assignment against deleted nodes: railyard has no admitted-assignment bookkeeping',
        'TestMergeTopologyAssignments': 'merges two TopologyAssignment objects (elastic scale-up): no placement',
        'TestHasLevel': 'checks that a request names known levels: railyard resolves labels to level indices in the CLI (jobs::resolve_levels), before the core',
        'TestCompareDomainLevelValues': 'compares two hand-made domain objects; the same label-value order is checked through placement by the tie-break cases of TestFindTopologyAssignments ("stable tie break on identical nodes: *")',
        'TestCountPodsInAssignment': 'counts pods in an assignment object: no placement',
        'TestComputeAssumedUsageFromAssignment': 'converts an assignment into per-domain usage (cache bookkeeping): no placement',
        'TestAddAssumedUsage': 'adds usage maps (cache bookkeeping): no placement',
        'TestTruncateAssignment': 'truncates an admitted assignment (elastic scale-down): railyard places whole jobs',
        'TestTASCachingRemainingResourcesFeatureGate': 'checks a cache of remaining resources behind a feature gate: no placement',
        'TestUpdateCountsToMinimumGenericLogsLeafSummary': 'checks a log line: no placement',
    }
    for func, r in reasons.items():
        bad.append({'name': '(whole test function)', 'test': func, 'reason': r})
    return good, bad

def git_show(git_dir, path):
    return subprocess.run(['git', '--git-dir', git_dir, 'show', f'{COMMIT}:{path}'],
                          check=True, capture_output=True, text=True).stdout

def main(git_dir):
    y = yaml
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates', 'sched', 'tests', 'kueue')
    out_path = os.path.join(root, 'tas_cache_test.yaml')
    differences_path = os.path.join(root, 'differences.yaml')
    diffs = (y.safe_load(open(differences_path)) or {}).get('tas_cache_test.yaml', {})
    src = git_show(git_dir, 'pkg/cache/scheduler/tas_cache_test.go')
    skip = dict(NOT_PORTED)
    good, bad = run(src, 'TestFindTopologyAssignments', '', skip)
    fixed = []
    for b in bad:
        if b['name'].startswith('elastic workload'):
            b['reason'] = ELASTIC
        if b['name'].startswith('multi-layer topology: mimic a real-world GB200'):
            continue
        fixed.append(b)
    # the GB200 case builds its nodes in a loop: expand it here
    s = src
    name = [n for n in [x for x in s.split('\n') if 'mimic a real-world GB200' in x]][0].strip().split('"')[1]
    a = s.index('"' + name + '"')
    body = s[a:]
    lv = body.index('levels: []string{')
    tail = '{' + body[lv:body.index('\n\t\t},\n', lv)] + '\n}'
    env = {'tasDataCenterLabel': 'cloud.com/datacenter', 'tasAIZoneLabel': 'cloud.com/aizone',
           'tasBlockLabel': 'cloud.com/topology-block', 'tasRackLabel': 'cloud.com/topology-rack'}
    pp = P(tokenize(tail), env)
    c = ev(pp.composite(None))
    c['nodes'] = gb200_case()
    c['featureGates'] = {'features.TASMultiLayerTopology': True}
    gc = case_out(name, c)
    idx = [i for i, x in enumerate(good) if x['name'].startswith('multi-layer topology: no feature gate')][0]
    good.insert(idx + 1, gc)
    for case in good:
        if case['name'] in diffs:
            case['difference'] = diffs[case['name']]
    fixed.append({'name': '(whole test function)', 'test': 'TestFindTopologyAssignmentsMultiLayerReplacement',
                  'reason': 'replaces failed nodes of admitted multi-layer workloads (TASFailedNodeReplacement): railyard has no node-replacement flow'})
    doc = {
        'kueue_commit': COMMIT,
        'file': 'pkg/cache/scheduler/tas_cache_test.go',
        'test': 'TestFindTopologyAssignments',
        'units': 'pod set requests as Kueue counts them: cpu in millicores, memory in bytes, other resources in units; node allocatable and pod requests as Kubernetes quantities',
        'cases': good,
        'not_ported': fixed,
    }
    with open(out_path, 'w') as f:
        f.write('# Kueue TAS unit-test cases as data (facts only), read from kubernetes-sigs/kueue at the commit below.\n')
        f.write('# Generated by scripts/kueue_cases.py; `difference:` lines come from crates/sched/tests/kueue/differences.yaml.\n')
        y.safe_dump(doc, f, sort_keys=False, width=100, allow_unicode=True, default_flow_style=None)
    print(len(good), 'cases,', len(fixed), 'not ported')
    sdiffs = (y.safe_load(open(differences_path)) or {}).get('tas_flavor_snapshot_test.yaml', {})
    snap_src = git_show(git_dir, 'pkg/cache/scheduler/tas_flavor_snapshot_test.go')
    sgood, sbad = snapshot_file(snap_src, sdiffs)
    doc = {
        'kueue_commit': COMMIT,
        'file': 'pkg/cache/scheduler/tas_flavor_snapshot_test.go',
        'test': 'TestSortedDomains, TestSortedDomainsWithLeader',
        'units': 'hand-set domain states (counts per domain); want_order lists domain ids in sort order',
        'cases': [],
        'sort_cases': sgood,
        'not_ported': sbad,
    }
    with open(os.path.join(root, 'tas_flavor_snapshot_test.yaml'), 'w') as f:
        f.write('# Kueue TAS unit-test cases as data (facts only), read from kubernetes-sigs/kueue at the commit below.\n')
        f.write('# Generated by scripts/kueue_cases.py; checked by the unit test in crates/sched/src/tas.rs.\n')
        y.safe_dump(doc, f, sort_keys=False, width=100, allow_unicode=True, default_flow_style=None)
    print(len(sgood), 'sort cases,', len(sbad), 'not ported')
    why = 'tests an internal step of balanced placement on hand-made domain states; railyard checks balanced placement end to end through the 16 balanced cases of TestFindTopologyAssignments instead'
    bal = {
        'kueue_commit': COMMIT,
        'file': 'pkg/cache/scheduler/tas_balanced_placement_test.go',
        'test': '(all test functions)',
        'units': 'none: no case is ported',
        'cases': [],
        'not_ported': [{'name': '(whole test function)', 'test': f, 'reason': why} for f in [
            'TestSelectOptimalDomainSetToFit', 'TestSelectOptimalDomainSetToFitStableTieBreak',
            'TestCompareDomainCapacityAndEntropy', 'TestPlaceSlicesOnDomainsBalanced',
            'TestPlaceSlicesOnDomainsBalancedStableTieBreak', 'TestPruneDomainsBelowThreshold',
            'TestPruneDomainsBelowThresholdPreservesAffinityScore', 'TestFindBestDomainsForBalancedPlacement']],
    }
    with open(os.path.join(root, 'tas_balanced_placement_test.yaml'), 'w') as f:
        f.write('# Kueue TAS unit tests not ported (with reasons), read from kubernetes-sigs/kueue at the commit below.\n')
        f.write('# Generated by scripts/kueue_cases.py.\n')
        y.safe_dump(bal, f, sort_keys=False, width=100, allow_unicode=True, default_flow_style=None)
    cdiffs = (y.safe_load(open(differences_path)) or {}).get('scheduler_tas_test.yaml', {})
    cgood, cbad = scheduler_file(git_show(git_dir, 'pkg/scheduler/scheduler_tas_test.go'), cdiffs)
    doc = {
        'kueue_commit': COMMIT,
        'file': 'pkg/scheduler/scheduler_tas_test.go',
        'test': 'TestScheduleForTAS',
        'units': 'pod set requests and allocatable as Kubernetes quantities; admitted workloads appear as running pods on the nodes of their assignment',
        'cases': cgood,
        'not_ported': cbad,
    }
    with open(os.path.join(root, 'scheduler_tas_test.yaml'), 'w') as f:
        f.write('# Kueue TAS unit-test cases as data (facts only), read from kubernetes-sigs/kueue at the commit below.\n')
        f.write('# Generated by scripts/kueue_cases.py; `difference:` lines come from crates/sched/tests/kueue/differences.yaml.\n')
        y.safe_dump(doc, f, sort_keys=False, width=100, allow_unicode=True, default_flow_style=None)
    print(len(cgood), 'scheduler cases,', len(cbad), 'not ported')



# ---- TestScheduleForTAS (pkg/scheduler/scheduler_tas_test.go) ----

def ev_sched(x):
    """Builders of the scheduler test on top of `ev`."""
    if isinstance(x, list):
        return [ev_sched(i) for i in x]
    if isinstance(x, dict):
        return {k: ev_sched(v) for k, v in x.items()}
    if not isinstance(x, tuple):
        return x
    tag = x[0]
    if tag == 'call':
        _, name, args = x
        a = [ev_sched(i) for i in args]
        simple = {'utiltas.Levels': lambda: a[0]['levels'],
                  'utiltestingapi.MakeTopologyDomainAssignment': lambda: {'Values': a[0], 'Count': a[1]},
                  'utiltestingapi.MakeTopologyAssignment': lambda: {'Levels': a[0], 'Domains': []},
                  'utiltestingapi.MakeWorkload': lambda: {'__wl': True, 'name': a[0], 'pod_sets': [], 'admitted': False},
                  'utiltestingapi.MakePodSet': lambda: {'__ps': True, 'name': a[0], 'count': a[1], 'requests': {}},
                  'utiltestingapi.MakeAdmission': lambda: {'__adm': True, 'cq': a[0], 'pod_sets': []},
                  'utiltestingapi.MakePodSetAssignment': lambda: {'__psa': True, 'name': a[0], 'ta': None, 'count': None},
                  'utiltestingapi.MakeTopology': lambda: {'__topo': True, 'name': a[0], 'levels': []},
                  'utiltestingapi.MakeDefaultOneLevelTopology': lambda: {'__topo': True, 'name': a[0], 'levels': ['kubernetes.io/hostname']},
                  'utiltestingapi.MakeResourceFlavor': lambda: {'__rf': True, 'name': a[0], 'node_labels': {}, 'topology': None, 'tolerations': []},
                  'utiltestingapi.MakeClusterQueue': lambda: {'__cq': True, 'name': a[0], 'other': []},
                  'utiltestingapi.MakeFlavorQuotas': lambda: {'__fq': True, 'name': a[0]},
                  'utiltestingapi.MakeAdmissionCheck': lambda: {'__ac': True},
                  'utiltestingapi.MakeLocalQueue': lambda: {'__lq': True},
                  'utiltesting.MakeEventRecord': lambda: {'__ev': True, 'name': a[1], 'reason': a[2], 'message': None},
                  'kueue.AdmissionCheckReference': lambda: a[0],
                  }
        if name in simple:
            return simple[name]()
        if name.startswith('time.') or name == 'metav1.NewTime':
            return 'now'
        if name == 'ptr.To':
            return a[0]
        return ev(('call', name, args))
    if tag == 'method':
        _, recv, m, args = x
        r = ev_sched(recv)
        a = [ev_sched(i) for i in args]
        if r == 'now' or isinstance(r, int):
            return r
        if isinstance(r, dict):
            if r.get('__wl'):
                if m == 'PodSets': r['pod_sets'].extend(a)
                elif m in ('ReserveQuotaAt', 'AdmittedAt') and m == 'ReserveQuotaAt': r['admitted'] = a[0]
                elif m == 'AdmittedAt': pass
                elif m in ('Queue', 'Obj'): pass
                else: r.setdefault('unsupported', []).append(m)
                return r
            if r.get('__ps'):
                if m == 'RequiredTopologyRequest': r['required'] = a[0]
                elif m == 'PreferredTopologyRequest': r['preferred'] = a[0]
                elif m == 'UnconstrainedTopologyRequest': r['unconstrained'] = True
                elif m == 'SliceRequiredTopologyRequest': r['slice_level'] = a[0]
                elif m == 'SliceSizeTopologyRequest': r['slice_size'] = a[0]
                elif m == 'SliceRequiredTopologyConstraints': r['slice_layers'] = list(a)
                elif m == 'Request': r['requests'][a[0]] = a[1]
                elif m == 'Toleration': r.setdefault('tolerations', []).append(a[0])
                elif m == 'SetMinimumCount': r['min_count'] = a[0]
                elif m == 'RequiredDuringSchedulingIgnoredDuringExecution': r['affinity_required'] = a[0]
                elif m == 'Obj': pass
                else: r.setdefault('unsupported', []).append(m)
                return r
            if r.get('__adm'):
                if m == 'PodSets': r['pod_sets'].extend(a)
                elif m == 'Obj': pass
                else: r.setdefault('unsupported', []).append(m)
                return r
            if r.get('__psa'):
                if m == 'TopologyAssignment': r['ta'] = a[0]
                elif m == 'Count': r['count'] = a[0]
                elif m == 'Assignment' or m == 'Obj': pass
                elif m == 'DelayedTopologyRequest': r['delayed'] = a[0]
                else: r.setdefault('unsupported', []).append(m)
                return r
            if 'Domains' in r and m in ('Domain', 'Obj'):
                if m == 'Domain': r['Domains'].append(a[0])
                return r
            if 'Values' in r and m == 'Obj':
                return r
            if r.get('__topo'):
                if m == 'Levels': r['levels'] = list(a)
                return r
            if r.get('__rf'):
                if m == 'NodeLabel': r['node_labels'][a[0]] = a[1]
                elif m == 'TopologyName': r['topology'] = a[0]
                elif m == 'Toleration': r['tolerations'].append(a[0])
                elif m == 'Taint': r.setdefault('unsupported', []).append(m)
                elif m == 'Obj': pass
                else: r.setdefault('unsupported', []).append(m)
                return r
            if r.get('__cq'):
                if m == 'ResourceGroup': r['quota'] = a
                elif m != 'Obj': r['other'].append(m)
                return r
            if r.get('__fq') or r.get('__ac') or r.get('__lq'):
                return r
            if r.get('__ev'):
                if m == 'Message': r['message'] = a[0]
                return r
        return ev(('method', recv, m, args))
    if tag == 'field':
        r = ev_sched(x[1])
        if isinstance(r, dict) and r.get('__ac') and x[2] == 'Name':
            return 'ac'
        if isinstance(r, dict) and r.get('__rf') and x[2] == 'Name':
            return r['name']
        return ev(x)
    if tag == 'spread':
        return ev_sched(x[1])
    return ev(x)

SKIP_FIELDS = {'eventCmpOpts', 'wantEvents', 'admissionChecks', 'resourceTransformations', 'patchStatusErr'}

def sched_case_raw(c):
    """Evaluate only what placement needs; note what else the case uses."""
    out = {'uses': sorted(k for k in c if k in SKIP_FIELDS and c[k])}
    for k, v in c.items():
        if k in SKIP_FIELDS:
            continue
        if k == 'clusterQueues':
            try:
                out[k] = ev_sched(v)
            except Unsupported:
                out[k] = [{'__cq': True, 'other': ['(unreadable)']}]
            continue
        out[k] = ev_sched(v)
    return out

def sched_podset(ps, want, wls_fail):
    o = {'name': ps['name'], 'count': ps['count'], 'requests': {}}
    for k, v in ps['requests'].items():
        o['requests'][k] = kueue_units(k, v)
    if ps.get('min_count') is not None:
        o['min_count'] = ps['min_count']
    for k in ('required', 'preferred', 'slice_level', 'slice_size'):
        if ps.get(k) is not None:
            o[k] = ps[k]
    if ps.get('unconstrained'):
        o['unconstrained'] = True
    if not any(ps.get(k) for k in ('required', 'preferred', 'unconstrained', 'slice_level', 'slice_layers')):
        o['implied'] = True
    if ps.get('slice_layers'):
        o['slice_layers'] = [{'level': c['Topology'], 'size': c['Size']} for c in ps['slice_layers']]
    if ps.get('tolerations'):
        o['tolerations'] = [tol_out(t) for t in ps['tolerations']]
    if ps.get('affinity_required'):
        terms = ps['affinity_required']
        terms = terms['NodeSelectorTerms'] if isinstance(terms, dict) else terms
        o['affinity_required'] = [{'match_expressions': [
            {'key': e['Key'], 'operator': e['Operator'], 'values': list(e.get('Values') or [])}
            for e in t['MatchExpressions']]} for t in terms]
    if wls_fail:
        o['want_fail'] = 'no_fit'
    elif want is not None:
        o['want'] = want
    else:
        o['want'] = None
    return o

def kueue_units(resource, q):
    """A Kubernetes quantity in the units Kueue counts requests in (cpu: millicores)."""
    q = str(q)
    mult = 1
    for suffix, m in [('Ki', 1024), ('Mi', 1024**2), ('Gi', 1024**3), ('Ti', 1024**4),
                      ('k', 10**3), ('M', 10**6), ('G', 10**9), ('T', 10**12), ('m', 0.001)]:
        if q.endswith(suffix):
            q, mult = q[:-len(suffix)], m
            break
    v = float(q) * mult * (1000 if resource == 'cpu' else 1)
    return int(round(v))

def sched_case(name, c):
    """One TestScheduleForTAS case in the schema of the placement cases, or a reason not to."""
    if c['uses'] and set(c['uses']) - {'wantEvents', 'eventCmpOpts'}:
        return None, 'uses ' + ', '.join(sorted(set(c['uses']) - {'wantEvents', 'eventCmpOpts'})) + ': scheduler machinery (admission checks / second pass, resource transformations, API errors) outside placement'
    wls = c['workloads']
    if any('UnhealthyNodes' in w.get('unsupported', []) for w in wls):
        return None, 'replaces a failed node of an admitted workload (TASFailedNodeReplacement): railyard has no node-replacement flow'
    if any(w.get('unsupported') for w in wls):
        return None, 'workload builder features outside placement: ' + ', '.join(sorted({m for w in wls for m in w.get('unsupported', [])}))
    if len(c.get('resourceFlavors', [])) != 1 or len(c.get('clusterQueues', [])) != 1:
        return None, 'several ResourceFlavors or ClusterQueues: flavor choice and fallback are Kueue quota machinery; railyard places on one flavor (the cluster)'
    rf = c['resourceFlavors'][0]
    if rf.get('unsupported'):
        return None, 'ResourceFlavor with ' + ', '.join(rf['unsupported'])
    topo = [t for t in c.get('topologies', []) if t['name'] == rf['topology']]
    if not topo:
        return None, 'no TAS topology on the flavor'
    levels = topo[0]['levels']
    pending = [w for w in wls if not w['admitted']]
    running = [w for w in wls if w['admitted']]
    if len(pending) != 1:
        return None, f'{len(pending)} pending workloads in one scheduling cycle: queue ordering, not placement'
    w = pending[0]
    key = f"default/{w['name']}"
    admitted = (c.get('wantNewAssignments') or {}).get(key)
    left = [x for v in (c.get('wantInadmissibleLeft') or {}).values() for x in v] + \
           [x for v in (c.get('wantLeft') or {}).values() for x in v]
    if admitted is None and key not in left:
        return None, 'the workload is neither admitted nor left pending in the expectations'
    nodes = [node_out(n) for n in c['nodes']]
    host_to_node = {n['labels'].get('kubernetes.io/hostname'): n['name'] for n in nodes}
    pods = []
    if c.get('pods'):
        pods += [{'name': p['name'], 'node': p['node'], 'phase': p['phase'],
                  'requests': {k: str(v) for k, v in p['requests'].items()}} for p in c['pods']]
    for r in running:
        adm = r['admitted']
        for ps, psa in zip(r['pod_sets'], adm['pod_sets']):
            ta = psa.get('ta')
            if not ta:
                continue
            for d in ta['Domains']:
                host = d['Values'][-1]
                for i in range(d['Count']):
                    pods.append({'name': f"{r['name']}-{ps['name']}-{host}-{i}", 'node': host_to_node.get(host, host),
                                 'phase': 'Running', 'requests': {k: str(v) for k, v in ps['requests'].items()}})
    wants = {}
    if admitted is not None:
        for psa in admitted['pod_sets']:
            ta = psa.get('ta')
            wants[psa['name']] = ta_out(ta) if ta else None
    o = {'name': name}
    gates = c.get('featureGates') or {}
    on = sorted(k.split('.')[-1] for k, v in gates.items() if v)
    off = sorted(k.split('.')[-1] for k, v in gates.items() if not v)
    if on: o['gates_on'] = on
    if off: o['gates_off'] = off
    o['levels'] = list(levels)
    if rf['node_labels']:
        o['flavor_node_labels'] = dict(rf['node_labels'])
    if rf['tolerations']:
        o['flavor_tolerations'] = [tol_out(t) for t in rf['tolerations']]
    o['nodes'] = nodes
    if pods:
        o['pods'] = pods
    o['pod_sets'] = [sched_podset(ps, wants.get(ps['name']), admitted is None) for ps in w['pod_sets']]
    return strip(o), None

def scheduler_file(src, diffs):
    head = 'func TestScheduleForTAS(t *testing.T) {'
    a = src.index(head) + len(head)
    b = src.index('func TestScheduleForTASPreemption')
    p, _ = parse_top(src[a:b], {'now': 'now'})
    good, bad = [], []
    for name, val, err in cases_map(p):
        if err is None:
            try:
                case, why = sched_case(name, sched_case_raw(val))
            except Unsupported as e:
                case, why = None, 'CONVERTER: ' + str(e)
        else:
            case, why = None, 'CONVERTER: ' + err
        if case is None and why.startswith('CONVERTER') and 'Resource Transformation' in name:
            why = 'uses resourceTransformations: scheduler machinery (resource transformations into quota resources) outside placement'
        if case is None:
            bad.append({'name': name, 'test': 'TestScheduleForTAS', 'reason': why})
            continue
        if name in diffs:
            case['difference'] = diffs[name]
        good.append(case)
    for func, why in [
        ('TestScheduleForTASPreemption', 'preemption decisions with Kueue priorities, cohorts and quotas: railyard preempts by its own rules (sched::place_with_preemption)'),
        ('TestScheduleForTASCohorts', 'borrowing and reclaim across cohorts: Kueue quota machinery, not placement'),
        ('TestScheduleForTASWhenWorkloadModifiedConcurrently', 'API conflict handling in the scheduler loop: not placement'),
        ('TestSecondPassSkipsWaitForPodsReadyBlock', 'scheduler second-pass gating: not placement'),
    ]:
        bad.append({'name': '(whole test function)', 'test': func, 'reason': why})
    return good, bad


if __name__ == '__main__':
    main(sys.argv[1])
