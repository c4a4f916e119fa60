/*
 * Stable positions for the map. Hand-written rather than a layout run: fcose moves every node it is given, and
 * pinning all old nodes with its fixedNodeConstraint still costs a whole layout per refresh; here only the new
 * nodes are placed, each at a free spot near the nodes it is connected to.
 */

const PREFIX = 'wattgraph.map.';
const MAX_ENTRIES = 20000; // per level and grouping: about 1 MB of localStorage at most

/** Positions by node id, per map key (level|grouping), kept in memory and in localStorage across visits. */
export class PositionStore {
  constructor(storage) {
    this.storage = storage;
    this.cache = new Map();
  }

  load(key) {
    if (!this.cache.has(key)) {
      const map = new Map();
      try {
        const raw = JSON.parse(this.storage.getItem(PREFIX + key) || '{}');
        for (const [id, p] of Object.entries(raw)) {
          if (Array.isArray(p) && Number.isFinite(p[0]) && Number.isFinite(p[1])) map.set(id, { x: p[0], y: p[1] });
        }
      } catch (e) { /* unreadable: start afresh */ }
      this.cache.set(key, map);
    }
    return this.cache.get(key);
  }

  save(key, positions) {
    const kept = new Map([...positions].slice(-MAX_ENTRIES));
    this.cache.set(key, kept);
    const raw = {};
    for (const [id, p] of kept) raw[id] = [Math.round(p.x * 10) / 10, Math.round(p.y * 10) / 10];
    try { this.storage.setItem(PREFIX + key, JSON.stringify(raw)); } catch (e) { /* full or disabled: memory only */ }
  }
}

const SPACING = 36;

/**
 * Places each node of {@code nodes} (Cytoscape nodes without a position yet) at the first free spot on a spiral
 * around {@code seed(node)} (a position or null), else around its already placed neighbours, else beside the map.
 */
export function placeNear(cy, nodes, seed) {
  cy.batch(() => place(cy, nodes, seed));
}

function place(cy, nodes, seed) {
  const pending = new Set(nodes.map((n) => n.id()));
  const grid = new Map();
  const cell = (x, y) => Math.floor(x / SPACING) + ',' + Math.floor(y / SPACING);
  const mark = (p) => grid.set(cell(p.x, p.y), true);
  const free = (p) => {
    const cx = Math.floor(p.x / SPACING), cy0 = Math.floor(p.y / SPACING);
    for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) if (grid.has((cx + dx) + ',' + (cy0 + dy))) return false;
    return true;
  };
  let maxX = -Infinity, midY = 0, count = 0;
  cy.nodes().forEach((n) => {
    if (n.isParent() || pending.has(n.id())) return;
    const p = n.position();
    mark(p);
    maxX = Math.max(maxX, p.x);
    midY += p.y;
    count++;
  });
  midY = count ? midY / count : 0;
  if (!Number.isFinite(maxX)) maxX = 0;
  // Nodes with the most placed neighbours first: each one placed is a neighbour for the next.
  const placed = new Map(nodes.map((n) => [n.id(), n.neighborhood('node').filter((m) => !pending.has(m.id())).length]));
  const order = nodes.slice().sort((a, b) => placed.get(b.id()) - placed.get(a.id()) || (a.id() < b.id() ? -1 : 1));
  let beside = 0;
  for (const n of order) {
    let base = seed ? seed(n) : null;
    if (!base) {
      const near = n.neighborhood('node').filter((m) => !m.isParent() && !pending.has(m.id()));
      if (near.length) {
        base = { x: 0, y: 0 };
        near.forEach((m) => { base.x += m.position('x') / near.length; base.y += m.position('y') / near.length; });
      } else {
        base = { x: maxX + 2 * SPACING, y: midY + (beside++) * SPACING };
      }
    }
    let p = base;
    // Golden-angle spiral: spots spread evenly, the k-th about sqrt(k) spacings out.
    for (let k = 1; !free(p) && k < 5000; k++) {
      const r = SPACING * 0.9 * Math.sqrt(k), a = k * 2.39996;
      p = { x: base.x + r * Math.cos(a), y: base.y + r * Math.sin(a) };
    }
    n.position(p);
    mark(p);
    pending.delete(n.id());
  }
}

/**
 * Moves every node that shares its spot (to the pixel) with another to the nearest free spot, keeping one there.
 * fcose's draft (spectral only) puts nodes with the same links, the leaves of one node say, on one spot, where
 * the one on top hid the others.
 */
export function unstack(cy) {
  const taken = new Set();
  const stacked = [];
  cy.nodes().forEach((n) => {
    if (n.isParent()) return;
    const key = Math.round(n.position('x')) + ',' + Math.round(n.position('y'));
    if (taken.has(key)) stacked.push(n); else taken.add(key);
  });
  if (stacked.length) placeNear(cy, stacked, (n) => ({ ...n.position() }));
  return stacked.length;
}
