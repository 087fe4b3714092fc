#!/usr/bin/env python3
"""Tables of SUMMARY.md from the JSON lines of run.sh (medians over repetitions).

    python3 bench/results/2026-11-27-workloads/summarize.py [--csv]

--csv rewrites each NAME.csv from NAME.jsonl (same columns, the header's order): the
binary of these runs wrote CSV rows empty (fixed since), its JSON lines are complete.
"""
import glob
import json
import os
import statistics
import sys

DIR = os.path.dirname(os.path.abspath(__file__))


def rows(pattern):
    out = []
    for path in sorted(glob.glob(os.path.join(DIR, pattern))):
        rep = os.path.basename(path).rsplit('.', 1)[0]
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                r['rep'] = rep
                out.append(r)
    return out


def key(r):
    return (r['store'], r['capacity_fraction'], r['policy'], r['hints'], r['advisor'])


def name(k):
    store, cap, policy, hints, advisor = k
    parts = [store]
    if policy not in ('-', 'default'):
        parts.append(policy)
    if hints != 'none':
        parts.append(hints)
    if advisor != '-':
        parts.append('advisor ' + advisor)
    return ' '.join(parts)


def store_hits(r):
    return r['dram_hit_ratio'] + r['nvme_hit_ratio']


def bw(rs):
    if rs[0]['advisor'] != 'on':
        return '-'
    d = med(rs, lambda r: r['advisor_dram_bytes_per_s']) / 1e9
    n = med(rs, lambda r: r['advisor_nvme_bytes_per_s']) / 1e9
    return f'{d:.2f}, {n:.2f}'


def grouped(rs):
    g = {}
    for r in rs:
        if not r.get('error'):
            g.setdefault(key(r), []).append(r)
    return g


def med(rs, f):
    return statistics.median(f(r) for r in rs)


def table(title, rs, reps=True):
    g = grouped(rs)
    print(f'\n### {title}\n')
    print('| run | n | mean TTFT ms (runs) | median of means | p50 ms | p99 ms | engine % | '
          'kvstash/peer % (DRAM + NVMe) | declined chunks | advisor DRAM, NVMe GB/s | max lag s |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for k, v in g.items():
        means = ', '.join(f"{r['ttft_mean_ms']:.1f}" for r in v)
        print(f"| {name(k)} | {len(v)} | {means} | {med(v, lambda r: r['ttft_mean_ms']):.1f} | "
              f"{med(v, lambda r: r['ttft_p50_ms']):.1f} | {med(v, lambda r: r['ttft_p99_ms']):.1f} | "
              f"{100 * med(v, lambda r: r['engine_hit_ratio']):.1f} | "
              f"{100 * med(v, lambda r: r['dram_hit_ratio']):.1f} + "
              f"{100 * med(v, lambda r: r['nvme_hit_ratio']):.1f} | "
              f"{med(v, lambda r: r['declined_chunks']):.0f} | {bw(v)} | "
              f"{med(v, lambda r: r['max_lag_s']):.2f} |")
    return g


def find(g, **want):
    for k, v in g.items():
        d = dict(zip(('store', 'capacity_fraction', 'policy', 'hints', 'advisor'), k))
        if all(d[a] == b for a, b in want.items()):
            return v
    return None


def chat_target(t1, label):
    none = find(t1, store='none')
    for store in ('kvstash-nvme', 'kvstash-nvme-ucx'):
        kv = find(t1, store=store, advisor='on')
        redis = find(t1, store='redis')
        if none and kv and redis:
            a = med(none, lambda r: r['ttft_mean_ms']) / med(kv, lambda r: r['ttft_mean_ms'])
            b = med(redis, lambda r: r['ttft_mean_ms']) / med(kv, lambda r: r['ttft_mean_ms'])
            print(f'- chat 64 users, engine cache 10%{label}, {store} (advisor on): none / kvstash = '
                  f'{a:.2f}x (target >= 3x: {"met" if a >= 3 else "not met"}); '
                  f'Redis / kvstash = {b:.2f}x (target >= 1.5x: {"met" if b >= 1.5 else "not met"})')


def targets(t1, t2, t3, t4):
    print('\n### Targets\n')
    chat_target(t1, '')
    none = find(t2, store='none')
    for store in ('kvstash', 'kvstash-ucx'):
        kv = find(t2, store=store, advisor='on')
        if none and kv:
            ratios = [k['ttft_mean_ms'] / n['ttft_mean_ms']
                      for k in kv for n in none if k['rep'] == n['rep']]
            x = statistics.median(ratios)
            print(f'- analytics, {store}: mean TTFT / none = {x:.3f} (median of per-run ratios '
                  f'{", ".join(f"{r:.3f}" for r in ratios)}; target <= 1.05: '
                  f'{"met" if x <= 1.05 else "not met"})')
    targets_34(t3, t4)


def targets_34(t3, t4):
    lru = find(t3, store='kvstash', policy='lru', hints='none')
    chain = find(t3, store='kvstash', policy='chain', hints='session+parent')
    if lru and chain:
        h = med(chain, store_hits) / med(lru, store_hits)
        tot = (med(chain, lambda r: store_hits(r) + r['engine_hit_ratio']) /
               med(lru, lambda r: store_hits(r) + r['engine_hit_ratio']))
        t = med(chain, lambda r: r['ttft_mean_ms']) / med(lru, lambda r: r['ttft_mean_ms'])
        print(f'- chat at 25%: chain + session+parent vs LRU: kvstash hit ratio '
              f'{100 * med(chain, store_hits):.1f}% vs {100 * med(lru, store_hits):.1f}% = '
              f'{h:.3f}x (engine + kvstash: {tot:.3f}x; target >= 1.15x: '
              f'{"met" if h >= 1.15 else "not met"}); mean TTFT {t:.3f}x of LRU\'s '
              f'({"lower" if t < 1 else "not lower"})')
    for adv in ('off', 'on'):
        none = find(t4, store='kvstash', hints='none', advisor=adv)
        ttl = find(t4, store='kvstash', hints='ttl', advisor=adv)
        if none and ttl:
            x = med(none, lambda r: r['ttft_p99_ms']) / med(ttl, lambda r: r['ttft_p99_ms'])
            print(f'- agents at 25%, advisor {adv}: p99 TTFT without / with TTL hints = '
                  f'{med(none, lambda r: r["ttft_p99_ms"]):.1f} / {med(ttl, lambda r: r["ttft_p99_ms"]):.1f} ms = '
                  f'{x:.2f}x (target >= 2x: {"met" if x >= 2 else "not met"})')


def policies(workload):
    rs = [r for r in rows(f'policies_{workload}.jsonl') if not r.get('error')]
    if not rs:
        return
    none = [r for r in rs if r['store'] == 'none']
    print(f'\n### Policies and hints, {workload} (store hit ratio % / mean TTFT ms)\n')
    if none:
        print(f"none (engine cache only): engine hit ratio {100 * none[0]['engine_hit_ratio']:.1f}%, "
              f"mean TTFT {none[0]['ttft_mean_ms']:.1f} ms\n")
    caps = sorted({r['capacity_fraction'] for r in rs if r['store'] != 'none'})
    print('| policy | hints | ' + ' | '.join(f'{c:g}' for c in caps) + ' |')
    print('|---|---|' + '---|' * len(caps))
    combos = []
    for r in rs:
        if r['store'] != 'none' and (r['policy'], r['hints']) not in combos:
            combos.append((r['policy'], r['hints']))
    for p, h in combos:
        cells = []
        for c in caps:
            m = [r for r in rs if (r['policy'], r['hints'], r['capacity_fraction']) == (p, h, c)]
            cells.append(f"{100 * store_hits(m[0]):.1f} / {m[0]['ttft_mean_ms']:.0f}" if m else '-')
        print(f'| {p} | {h} | ' + ' | '.join(cells) + ' |')


def rewrite_csv():
    for path in sorted(glob.glob(os.path.join(DIR, '*.jsonl'))):
        csv = path[:-len('jsonl')] + 'csv'
        with open(csv) as f:
            header = f.readline().strip().split(',')
        lines = [','.join(header)]
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                cells = []
                for h in header:
                    v = r[h]
                    if v is None:
                        v = ''
                    cells.append(str(v).replace(',', ';').replace('\n', ' '))
                lines.append(','.join(cells))
        with open(csv, 'w') as f:
            f.write('\n'.join(lines) + '\n')


def main():
    if '--csv' in sys.argv:
        rewrite_csv()
    t1 = table('Target 1: chat, 64 users, engine cache 10%', rows('t1_chat_r*.jsonl'))
    t2 = table('Target 2: analytics', rows('t2_analytics_r*.jsonl'))
    t3 = table('Target 3: chat at 25%, LRU vs chain + session hints (advisor off)',
               rows('t3_chat_policy_r*.jsonl'))
    t4 = table('Target 4: agents at 25%, TTL hints', rows('t4_agents_ttl_r*.jsonl'))
    targets(t1, t2, t3, t4)
    table('Fetch or recompute: throttled NVMe', rows('advisor_throttled_nvme.jsonl'))
    w = table('What if: target 1 on a 150 TFLOP/s GPU', rows('whatif_chat_150tflops_r*.jsonl'))
    print()
    chat_target(w, ' on a 150 TFLOP/s GPU')
    for w in ('chat', 'agents'):
        policies(w)
    f3 = table('After the storage fixes: target 3', rows('fixes_t3_chat_policy_r*.jsonl'))
    f4 = table('After the storage fixes: target 4', rows('fixes_t4_agents_ttl_r*.jsonl'))
    print()
    targets_34(f3, f4)


if __name__ == '__main__':
    main()
