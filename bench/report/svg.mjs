/**
 * The benchmark chart, hand-written SVG (no dependencies): small grouped-bar panels, one bar
 * per system, a dashed line for the issue's target, each bar labelled with its value; and a
 * line panel per scale axis (waiting: N on one key; held locks: n in one process), a line per system.
 */
const COLORS = { ours: '#2166ac', dlc: '#d6604d', raw: '#878787' };
const NAMES = { ours: 'nestjs-dynamo-lock', dlc: 'dynamodb-lock-client', raw: 'raw polling (25 ms)' };
const SYSTEMS = ['ours', 'dlc', 'raw'];
const W = 440;
const H = 210;

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');
const fmt = (v) => (v == null ? '–' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

/** Panels from the results; groups whose scenario did not run are left out. */
function panels({ results: r }) {
  const cp = r.crossProcess ?? {};
  const holds = Object.values(cp).map((h) => ({
    label: h.ours.holdMs >= 1000 ? `4 proc, ${h.ours.holdMs / 1000} s` : `4 proc, ${h.ours.holdMs} ms`,
    h,
  }));
  const pick = (res, f) => Object.fromEntries(SYSTEMS.map((s) => [s, res?.[s] ? f(res[s]) : null]));
  return [
    {
      title: 'Throughput, % of the physical limit (higher is better)',
      groups: [
        ...(r.inProcess ? [{ label: '32 callers, 20 ms', values: pick(r.inProcess, (x) => x.fractionOfLimit * 100), target: 95 }] : []),
        ...holds.map(({ label, h }) => ({ label, values: pick(h, (x) => x.fractionOfLimit * 100), target: 90 })),
      ],
    },
    {
      title: 'Cost per acquisition, write-equivalents (log; lower is better)',
      log: true,
      groups: [
        ...(r.uncontended ? [{ label: 'uncontended', values: pick(r.uncontended, (x) => x.writeEqPerCycle), target: 2 }] : []),
        ...(r.inProcess ? [{ label: '32 callers', values: pick(r.inProcess, (x) => x.writeEqPerAcquisition), target: 1.1 }] : []),
        ...holds.map(({ label, h }) => ({
          label,
          values: pick(h, (x) => x.writeEqPerAcquisition),
          target: h.ours.holdMs >= 1000 ? 5 : 2.5,
        })),
      ],
    },
    {
      title: 'Fairness: smallest share / mean share (higher is better)',
      groups: holds.map(({ label, h }) => ({ label, values: pick(h, (x) => x.minShare), target: 0.6 })),
    },
    {
      title: 'Hand-over p50, ms (lower is better)',
      groups: holds.map(({ label, h }) => ({ label, values: pick(h, (x) => x.handoverMs.p50) })),
    },
    {
      title: 'Takeover, ms until another process holds it (log; lower better)',
      log: true,
      groups: r.takeover
        ? [
            {
              label: 'SIGKILL, from last heartbeat',
              values: pick(r.takeover, (x) => x.kill.fromHeartbeatMs.max),
              target: r.takeover.ours.leaseMs + 500,
            },
            { label: 'graceful, from SIGTERM', values: pick(r.takeover, (x) => x.graceful.fromSignalMs.max) },
          ]
        : [],
    },
    ...waitingPanels(r.waiting, r.waitingOthers),
    ...heldPanels(r.scale),
  ].filter((p) => (p.kind === 'lines' ? p.xs.length > 0 : p.groups.length > 0));
}

/** Targets per acquisition at each N of the waiting scenario (docs: report/markdown.mjs). */
const WAITING_TARGETS = { wcu: { 4: 2.5, 64: 3.5, 200: 3.5 }, rcu: { 4: 3, 64: 4, 200: 4 } };
/** Targets of the held-locks axis, at every n (docs: report/markdown.mjs). */
const HEAP_PER_LOCK_TARGET_KIB = 2;

/**
 * A line per system over the union of the systems' n: `rows[id]` is that system's rows (`n`, and
 * `skipped` for a row not measured, left out), `value(row)` its figure, `target(n)` ours at n, if any.
 */
function systemSeries(rows, value, target = () => null) {
  const measured = Object.fromEntries(Object.entries(rows).map(([id, list]) => [id, list.filter((row) => !row.skipped)]));
  const ids = SYSTEMS.filter((id) => measured[id]?.length);
  const xs = [...new Set(ids.flatMap((id) => measured[id].map((row) => row.n)))].sort((a, b) => a - b);
  const series = ids.map((id) => {
    const at = (n) => measured[id].find((row) => row.n === n);
    return {
      label: NAMES[id],
      color: COLORS[id],
      values: xs.map((n) => (at(n) ? value(at(n)) : null)),
      targets: id === 'ours' ? xs.map(target) : [],
    };
  });
  return { xs, series };
}

/**
 * Waiting at scale, every system that ran it (ours from the waiting scenario, the others from
 * waiting-others): WCU and RCU per acquisition, and acquisitions/s, against N.
 */
function waitingPanels(ours, others) {
  const rows = {
    ...Object.fromEntries(Object.entries(others?.systems ?? {}).map(([id, o]) => [id, o.rows])),
    ...(ours ? { ours: ours.rows } : {}),
  };
  const xLabel = (n) => `N = ${n}`;
  return [
    {
      kind: 'lines',
      log: true,
      xLabel,
      title: 'Waiting at scale: WCU per acquisition (log; lower is better)',
      ...systemSeries(
        rows,
        (row) => row.wcuPerAcquisition,
        (n) => WAITING_TARGETS.wcu[n] ?? null,
      ),
    },
    {
      kind: 'lines',
      log: true,
      xLabel,
      title: 'Waiting at scale: RCU per acquisition (log; lower is better)',
      ...systemSeries(
        rows,
        (row) => row.rcuPerAcquisition,
        (n) => WAITING_TARGETS.rcu[n] ?? null,
      ),
    },
    { kind: 'lines', xLabel, title: 'Waiting at scale: acquisitions/s (higher is better)', ...systemSeries(rows, (row) => row.perSecond) },
  ];
}

/** The held-locks axis (scenario 6): acquisitions/s and heap per held lock against n held. */
function heldPanels(scale) {
  const rows = Object.fromEntries(Object.entries(scale ?? {}).map(([id, o]) => [id, o.byN ?? []]));
  const xLabel = (n) => `${n.toLocaleString('en')} held`;
  return [
    { kind: 'lines', xLabel, title: 'Held locks: acquisitions/s (higher is better)', ...systemSeries(rows, (row) => row.acquirePerSecond) },
    {
      kind: 'lines',
      xLabel,
      title: 'Held locks: heap per held lock, KiB (lower is better)',
      ...systemSeries(
        rows,
        (row) => row.heapBytesPerLock / 1024,
        () => HEAP_PER_LOCK_TARGET_KIB,
      ),
    },
  ];
}

/**
 * A line panel: x values at even steps (labelled by `p.xLabel`), y linear from 0 or on a log scale
 * (`p.log`), a series per system in its colour, and a dashed target tick per point where a series has one.
 */
function linePanel(p, x0, y0) {
  const top = 34;
  const bottom = 30;
  const left = 44;
  const right = 36;
  const plotH = H - top - bottom;
  const all = p.series.flatMap((s) => [...s.values, ...s.targets]).filter((v) => v != null && v > 0);
  let y;
  const ticks = [];
  if (p.log) {
    const lo = Math.log10(Math.min(...all, 1) / 1.5);
    const hi = Math.log10(Math.max(...all, 1) * 1.5);
    y = (v) => y0 + top + plotH - ((Math.log10(v) - lo) / (hi - lo)) * plotH;
    // Grid lines at 1, 2 and 5 of each decade in range.
    for (let d = Math.floor(lo); d <= Math.ceil(hi); d++)
      ticks.push(...[1, 2, 5].map((m) => m * 10 ** d).filter((v) => v >= 10 ** lo && v <= 10 ** hi));
  } else {
    const max = Math.max(...all, 1e-9) * 1.2;
    y = (v) => y0 + top + plotH - (v / max) * plotH;
    // About four grid lines at a round step.
    const step = 10 ** Math.floor(Math.log10(max / 4));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => max / s <= 5);
    for (let v = nice; v < max; v += nice) ticks.push(v);
  }
  const plotted = (v) => v != null && (v > 0 || !p.log);
  // Points kept clear of the axis labels and the panel's edge, so their value labels fit.
  const pad = 28;
  const step = (W - left - right - 2 * pad) / Math.max(1, p.xs.length - 1);
  const x = (i) => x0 + left + pad + (p.xs.length === 1 ? (W - left - right) / 2 - pad : i * step);
  const parts = [
    `<text x="${x0 + 10}" y="${y0 + 16}" class="t">${esc(p.title)}</text>`,
    `<line x1="${x0 + left}" x2="${x0 + W - right}" y1="${y0 + top + plotH}" y2="${y0 + top + plotH}" class="axis"/>`,
  ];
  for (const v of ticks) {
    parts.push(`<line x1="${x0 + left}" x2="${x0 + W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${x0 + left - 6}" y="${y(v) + 3}" class="m">${+v.toPrecision(3)}</text>`);
  }
  p.xs.forEach((n, i) => parts.push(`<text x="${x(i)}" y="${y0 + top + plotH + 15}" class="g">${esc(p.xLabel(n))}</text>`));
  p.series.forEach((s, si) => {
    const points = s.values.map((v, i) => (plotted(v) ? [x(i), y(v), v, i] : null)).filter(Boolean);
    if (points.length > 1) {
      parts.push(
        `<polyline points="${points.map(([px, py]) => `${px},${py}`).join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`,
      );
    }
    for (const [px, py, v, i] of points) {
      parts.push(`<circle cx="${px}" cy="${py}" r="3" fill="${s.color}"><title>${esc(s.label)}: ${fmt(v)}</title></circle>`);
      // Labelled above the point where this series is the highest at this x, below where it is the
      // lowest, else to its right, so that the labels of up to three series stay apart (on a tie,
      // the series listed first counts as the higher).
      const higher = (o, oi) => o.values[i] > v || (o.values[i] === v && oi < si);
      const others = p.series.map((o, oi) => [o, oi]).filter(([o]) => o !== s && plotted(o.values[i]));
      const [lx, ly, anchor] = others.every(([o, oi]) => !higher(o, oi))
        ? [px, py - 7, 'middle']
        : others.every(([o, oi]) => higher(o, oi))
          ? [px, py + 14, 'middle']
          : [px + 6, py + 3, 'start'];
      parts.push(`<text x="${lx}" y="${ly}" class="v" fill="${s.color}" style="text-anchor:${anchor}">${fmt(v)}</text>`);
    }
    s.targets.forEach((t, i) => {
      if (t == null) return;
      parts.push(
        `<line x1="${x(i) - 12}" x2="${x(i) + 12}" y1="${y(t)}" y2="${y(t)}" class="target"><title>${esc(s.label)} target ${fmt(t)}</title></line>`,
      );
    });
  });
  return parts.join('\n');
}

function panel(p, x0, y0) {
  if (p.kind === 'lines') return linePanel(p, x0, y0);
  const top = 28;
  const bottom = 36;
  const left = 10;
  const plotH = H - top - bottom;
  const all = p.groups.flatMap((g) => [...Object.values(g.values), g.target ?? 0]).filter((v) => v != null);
  const groupW = (W - 2 * left) / p.groups.length;
  const barW = Math.min(34, (groupW - 16) / SYSTEMS.length);
  let max;
  let y;
  if (p.log) {
    // Log scale for figures spanning orders of magnitude (costs, takeover times).
    const positive = all.filter((v) => v > 0);
    const lo = Math.log10(Math.min(...positive) / 2);
    const hi = Math.log10(Math.max(...positive) * 2);
    max = Infinity;
    y = (v) => y0 + top + plotH - (v > 0 ? Math.max(0, (Math.log10(v) - lo) / (hi - lo)) : 0) * plotH;
  } else {
    // Clip far outliers at 3× the largest of our figure and the targets, so ours stays readable.
    const anchor = Math.max(...p.groups.flatMap((g) => [g.values.ours ?? 0, g.target ?? 0]), 1e-9);
    max = Math.min(Math.max(...all, 1e-9), anchor * 3) * 1.15;
    y = (v) => y0 + top + plotH - (Math.min(v, max) / max) * plotH;
  }
  const parts = [
    `<text x="${x0 + left}" y="${y0 + 16}" class="t">${esc(p.title)}</text>`,
    `<line x1="${x0 + left}" x2="${x0 + W - left}" y1="${y(0)}" y2="${y(0)}" class="axis"/>`,
  ];
  p.groups.forEach((g, gi) => {
    const gx = x0 + left + gi * groupW + (groupW - barW * SYSTEMS.length) / 2;
    SYSTEMS.forEach((s, si) => {
      const v = g.values[s];
      if (v == null) return;
      const bx = gx + si * barW;
      const clipped = v > max;
      parts.push(
        `<rect x="${bx + 2}" y="${y(v)}" width="${barW - 4}" height="${Math.max(0.5, y(0) - y(v))}" fill="${COLORS[s]}"><title>${esc(NAMES[s])}: ${fmt(v)}</title></rect>`,
      );
      parts.push(`<text x="${bx + barW / 2}" y="${y(v) - 3}" class="v">${clipped ? '↑' : ''}${fmt(v)}</text>`);
    });
    if (g.target != null) {
      const ty = y(g.target);
      parts.push(
        `<line x1="${gx - 4}" x2="${gx + barW * SYSTEMS.length + 4}" y1="${ty}" y2="${ty}" class="target"><title>target ${fmt(g.target)}</title></line>`,
      );
    }
    parts.push(`<text x="${gx + (barW * SYSTEMS.length) / 2}" y="${y(0) + 15}" class="g">${esc(g.label)}</text>`);
  });
  return parts.join('\n');
}

export function chartSvg(report) {
  const ps = panels(report);
  const cols = 2;
  const legendH = 30;
  const width = cols * W + 20;
  const height = legendH + Math.ceil(ps.length / cols) * H + 10;
  const legend = SYSTEMS.map(
    (s, i) =>
      `<rect x="${14 + i * 200}" y="10" width="12" height="12" fill="${COLORS[s]}"/><text x="${30 + i * 200}" y="20" class="l">${NAMES[s]}</text>`,
  ).join('');
  const meta = report.meta;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">
<style>.t{font-size:12px;font-weight:600}.v{font-size:10px;text-anchor:middle}.g{font-size:11px;text-anchor:middle;fill:#444}.l{font-size:12px}.axis{stroke:#999}.target{stroke:#1a9641;stroke-width:2;stroke-dasharray:5 3}.m{font-size:10px;fill:#666;text-anchor:end}</style>
<rect width="100%" height="100%" fill="#fff"/>
${legend}<line x1="614" x2="640" y1="16" y2="16" class="target"/><text x="644" y="20" class="l">target</text>
<text x="${width - 10}" y="${height - 4}" class="m">${esc(`${meta.mode} run, ${meta.server.name}, ${meta.machine.cpus} CPUs, Node ${meta.machine.node}, ${meta.date.slice(0, 10)}`)}</text>
${ps.map((p, i) => panel(p, 10 + (i % cols) * W, legendH + Math.floor(i / cols) * H)).join('\n')}
</svg>
`;
}
