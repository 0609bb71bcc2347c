// SPDX-License-Identifier: Apache-2.0
// The operator page's script (api/OperatorPage): every REFRESH_MS it fetches /v1/status, /v1/nodes,
// /v1/leaderboard and /v1/loss and draws them. Everything a node sent (names, teams) goes into the
// page as text nodes, never as markup. Stages are numbered from 1, as the desktop app numbers them
// (the JSON numbers them from 0). Numbers carry the reader's thousands separators.
'use strict';

(function () {
  const REFRESH_MS = 5000;
  const TIMEOUT_MS = 4500;
  const STATES = {
    training: 'Training', syncing: 'Syncing', waiting: 'Waiting', moving: 'Moving', paused: 'Paused',
  };

  let lastOkAt = 0;       // Date.now() of the last complete refresh
  let failingSince = 0;   // Date.now() of the first failure in a row; 0 while it answers
  let lastError = '';
  let refreshes = 0;

  const $ = (id) => document.getElementById(id);

  // An element with attributes and children; strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function num(x, digits) {
    if (x === null || x === undefined || !Number.isFinite(Number(x))) return '–';
    return Number(x).toLocaleString(undefined, { maximumFractionDigits: digits || 0 });
  }

  function credits(x) {
    const v = Number(x) || 0;
    return num(v, v >= 100 ? 0 : v >= 1 ? 2 : 4);
  }

  function speed(tokensPerSecond) {
    if (tokensPerSecond === null || tokensPerSecond === undefined) return '–';
    return num(tokensPerSecond, tokensPerSecond < 10 ? 1 : 0);
  }

  function duration(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d > 0) return d.toLocaleString() + ' d ' + h + ' h';
    if (h > 0) return h + ' h ' + String(m).padStart(2, '0') + ' min';
    if (m > 0) return m + ' min';
    return s + ' s';
  }

  function replaceRows(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // A name a node chose, or "anonymous" set apart from real names.
  function who(entry) {
    return entry.anonymous
      ? el('span', { class: 'name anon', title: 'node ' + entry.node }, 'anonymous')
      : el('span', { class: 'name', title: 'node ' + entry.node }, entry.name);
  }

  function team(name) {
    return name ? el('span', { class: 'name' }, name) : el('span', { class: 'none' }, '—');
  }

  async function fetchJson(path) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
    try {
      const r = await fetch(path, { cache: 'no-store', signal: abort.signal });
      let body = null;
      try { body = await r.json(); } catch (e) { body = null; }
      if (!r.ok) {
        const why = body && typeof body.error === 'string' ? body.error : r.statusText;
        throw new Error(path + ' answered ' + r.status + (why ? ': ' + why : ''));
      }
      if (body === null || typeof body !== 'object') throw new Error(path + ' answered no JSON');
      return body;
    } catch (e) {
      if (e.name === 'AbortError') throw new Error(path + ' did not answer within ' + TIMEOUT_MS / 1000 + ' s');
      if (e instanceof TypeError) throw new Error('no connection (' + e.message + ')');
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  function drawStatus(s) {
    $('model').textContent = s.model || '?';
    const stages = (s.stages || []).length;
    $('model-size').textContent = '(' + num(s.parameters) + ' parameters, ' + num(stages) +
      (stages === 1 ? ' stage)' : ' stages)');
    $('version').textContent = s.version || '?';
    $('uptime').textContent = duration(s.uptime_s || 0);

    const mb = s.microbatches || {};
    // A new run writes its initial weights first, and every start reads its checkpoints back; nodes
    // are asked to come back until then.
    const prep = s.state === 'preparing' ? (s.preparing || {}) : null;
    const prepText = p => p.phase === 'checking_data'
      ? 'checking the training data: ' + num(p.percent, 1) + '% (' + num((p.data_bytes_checked || 0) / 1e6) +
        ' of ' + num((p.data_bytes_to_check || 0) / 1e6) + ' MB read); nodes join once it is checked'
      : p.phase === 'opening'
      ? 'checking the checkpoints: ' + num(p.percent, 1) + '% (' + num((p.bytes_read || 0) / 1e6) +
        ' of ' + num((p.bytes_to_read || 0) / 1e6) + ' MB read); nodes join once they are checked'
      : 'writing the initial weights: ' + num(p.percent, 1) + '% (' + num((p.bytes_written || 0) / 1e6) +
        ' of ' + num((p.bytes_total || 0) / 1e6) + ' MB written); nodes join once they are checked';
    const figures = [
      ...(prep ? [['Preparing', prepText(prep)]] : []),
      ...(s.data_error ? [['Training data', 'no microbatch is issued until it reads again: ' + s.data_error]] : []),
      ['Nodes online', num(s.nodes && s.nodes.online) + ' of ' + num(s.nodes && s.nodes.total) + ' admitted'],
      ['Step', num(s.step)],
      ['Loss', typeof s.loss === 'number' ? num(s.loss, 4) : '–'],
      ['Tokens trained', num(s.tokens)],
      ['Tokens per second', num(s.tokens_per_second, 1)],
      ['Microbatches', num(mb.completed) + ' completed of ' + num(mb.issued) + ' issued, ' +
        num(mb.in_flight) + ' in flight'],
      ['Credits granted', credits((Number(s.credits_granted_flop) || 0) / 1e15)],
      ['Joins / leaves', num(s.joins) + ' / ' + num(s.leaves)],
    ];
    $('overview').replaceChildren(...figures.map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v))));

    replaceRows($('stages').tBodies[0], (s.stages || []).map((st) => el('tr', {},
      el('th', { scope: 'row' }, 'Stage ' + (st.stage + 1)),
      el('td', { class: 'num' }, num(st.nodes_online)),
      el('td', { class: 'num' }, num(st.nodes)),
      el('td', { class: 'num' }, num(st.ghosts)),
      el('td', { class: 'num' }, num(st.tasks_in_flight)),
      el('td', { class: 'num' }, st.seconds_per_token > 0 ? speed(1 / st.seconds_per_token) : '–'),
      el('td', { class: 'num' }, num(st.version)),
      el('td', { class: 'num' }, num(st.step)))));
  }

  function drawNodes(n) {
    const stages = n.stages || [];
    const blocks = stages.map((st) => {
      const title = el('h3', {}, 'Stage ' + (st.stage + 1) + ' of ' + stages.length +
        ' · ' + num(st.nodes_online) + (st.nodes_online === 1 ? ' node' : ' nodes'));
      if (!st.nodes || st.nodes.length === 0) {
        return el('div', { class: 'stage-nodes' }, title,
          el('p', { class: 'hint' }, 'No node online on this stage: training waits until one joins.'));
      }
      const rows = st.nodes.map((node) => el('tr', { class: 'node' },
        el('td', {}, who(node)),
        el('td', {}, team(node.team)),
        el('td', {}, el('span', { class: 'state state-' + node.state }, STATES[node.state] || node.state)),
        el('td', { class: 'num' }, speed(node.tokens_per_second)),
        el('td', { class: 'num' }, num(node.gflops, 1)),
        el('td', { class: 'num' }, credits(node.credits))));
      const table = el('table', { class: 'nodes' },
        el('thead', {}, el('tr', {},
          el('th', { scope: 'col' }, 'Node'), el('th', { scope: 'col' }, 'Team'),
          el('th', { scope: 'col' }, 'State'), el('th', { scope: 'col', class: 'num' }, 'Tokens/s'),
          el('th', { scope: 'col', class: 'num' }, 'Benchmark (GFLOPS)'),
          el('th', { scope: 'col', class: 'num' }, 'Credits'))),
        el('tbody', {}, ...rows));
      const more = st.more > 0 ? el('p', { class: 'hint' }, 'and ' + num(st.more) + ' more') : null;
      return el('div', { class: 'stage-nodes' }, title, table, more);
    });
    $('nodes').replaceChildren(...blocks);
  }

  function drawLeaderboard(b) {
    const nodes = b.nodes || [];
    const teams = b.teams || [];
    const empty = (cols, text) => [el('tr', {}, el('td', { colspan: cols, class: 'hint' }, text))];
    replaceRows($('leaderboard-nodes').tBodies[0], nodes.length === 0
      ? empty(5, 'No credit granted yet.')
      : nodes.map((e) => el('tr', {},
        el('td', { class: 'num' }, num(e.rank)),
        el('td', {}, who(e)),
        el('td', {}, team(e.team)),
        el('td', { class: 'num' }, credits(e.credits)),
        el('td', { class: 'num' }, credits(e.credits_24h)))));
    replaceRows($('leaderboard-teams').tBodies[0], teams.length === 0
      ? empty(5, 'No team yet: a volunteer names one with --team or in the app\'s settings.')
      : teams.map((t) => el('tr', {},
        el('td', { class: 'num' }, num(t.rank)),
        el('td', {}, team(t.team)),
        el('td', { class: 'num' }, num(t.members)),
        el('td', { class: 'num' }, credits(t.credits)),
        el('td', { class: 'num' }, credits(t.credits_24h)))));
  }

  // The loss of the whole run (every process of this coordinator), as an SVG line.
  function drawLoss(l) {
    const points = (l.points || []).filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
    if (points.length < 2) {
      $('loss').replaceChildren(el('p', { class: 'hint' }, 'The loss curve appears after two steps.'));
      $('loss-caption').textContent = '';
      return;
    }
    const W = 640, H = 220, left = 56, bottom = 24, top = 8, right = 12;
    const firstStep = points[0][0], lastStep = points[points.length - 1][0];
    let lo = Infinity, hi = -Infinity;
    for (const p of points) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); }
    const span = Math.max(hi - lo, 1e-9), steps = Math.max(lastStep - firstStep, 1);
    const x = (step) => left + (step - firstStep) / steps * (W - left - right);
    const y = (loss) => top + (hi - loss) / span * (H - top - bottom);
    const chart = svg('svg', {
      id: 'loss-chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img',
      'aria-label': 'Loss from ' + num(hi, 3) + ' to ' + num(lo, 3) + ' over steps ' + num(firstStep) +
        ' to ' + num(lastStep),
    });
    chart.append(
      svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: H - bottom }),
      svg('line', { class: 'axis', x1: left, y1: H - bottom, x2: W - right, y2: H - bottom }),
      svg('text', { class: 'label', x: left - 6, y: top + 10, 'text-anchor': 'end' }, num(hi, 3)),
      svg('text', { class: 'label', x: left - 6, y: H - bottom, 'text-anchor': 'end' }, num(lo, 3)),
      svg('text', { class: 'label', x: left, y: H - 6, 'text-anchor': 'start' }, 'step ' + num(firstStep)),
      svg('text', { class: 'label', x: W - right, y: H - 6, 'text-anchor': 'end' }, 'step ' + num(lastStep)),
      svg('polyline', {
        class: 'curve',
        points: points.map((p) => x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1)).join(' '),
      }));
    $('loss').replaceChildren(chart);
    const last = points[points.length - 1];
    $('loss-caption').textContent = 'Mean loss per step, steps ' + num(firstStep) + ' to ' + num(lastStep) +
      ' (the whole run, across coordinator restarts' +
      (points.length < lastStep - firstStep + 1 ? '; ' + num(points.length) + ' points, neighbouring steps averaged' : '') +
      '). Last: ' + num(last[1], 4) + ' after ' + num(last[2]) + ' tokens.';
  }

  function showFreshness() {
    const now = Date.now();
    if (lastOkAt === 0 && failingSince === 0) return;
    const ago = lastOkAt ? Math.max(0, Math.round((now - lastOkAt) / 1000)) : null;
    $('updated').textContent = ago === null ? 'Not updated yet' : 'Updated ' + num(ago) + ' s ago';
    const error = $('error');
    if (failingSince) {
      error.textContent = 'The coordinator is not answering (' + lastError + ') since ' +
        new Date(failingSince).toLocaleTimeString() + '. ' +
        (ago === null ? 'Nothing to show yet' : 'What you see is from ' + num(ago) + ' s ago') +
        '; trying again every ' + REFRESH_MS / 1000 + ' s.';
      error.hidden = false;
    } else {
      error.hidden = true;
    }
  }

  async function refresh() {
    try {
      const [status, nodes, board, loss] = await Promise.all(
        ['/v1/status', '/v1/nodes', '/v1/leaderboard', '/v1/loss'].map(fetchJson));
      drawStatus(status);
      drawNodes(nodes);
      drawLeaderboard(board);
      drawLoss(loss);
      lastOkAt = Date.now();
      failingSince = 0;
      refreshes += 1;
      document.body.dataset.refreshes = String(refreshes);
    } catch (e) {
      lastError = e && e.message ? e.message : String(e);
      if (!failingSince) failingSince = Date.now();
    }
    showFreshness();
    setTimeout(refresh, REFRESH_MS);
  }

  function start() {
    setInterval(showFreshness, 1000);
    refresh();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
