// SPDX-License-Identifier: Apache-2.0
// The HTML report's script, embedded into repro-audit at build time (reports/html.cpp). Every fact
// is already in the static page; this only adds conveniences: filter and sort the heat map, show
// only failures, expand and collapse the details, open the details a link points into, open
// everything for printing, and copy the measured fix costs from the timing section into the fix
// tables. It writes text only through textContent, fetches nothing and logs nothing.
(function () {
  'use strict';
  var doc = document;

  function el(tag, attrs, text) {
    var e = doc.createElement(tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (text) e.textContent = text;
    return e;
  }
  function all(selector, root) { return Array.prototype.slice.call((root || doc).querySelectorAll(selector)); }

  // Heat map: filter by name, only failures, and sort; the rows themselves never change.
  var severity = { diverged: 0, raised: 1, crashed: 2, timeout: 3, skipped: 5, reproducible: 6 };
  function setUpMatrix() {
    var box = doc.getElementById('matrix-controls');
    var body = doc.querySelector('table.heatmap tbody');
    if (!box || !body) return;
    var rows = all('tr.hm-row', body);
    if (rows.length < 2) return;
    var search = el('input', { type: 'search', placeholder: 'filter targets', 'aria-label': 'filter targets' });
    var failures = el('input', { type: 'checkbox', id: 'only-failures' });
    var failuresLabel = el('label', { for: 'only-failures' }, ' only failures');
    failuresLabel.insertBefore(failures, failuresLabel.firstChild);
    var sort = el('select', { 'aria-label': 'sort' });
    [['index', 'in audit order'], ['severity', 'worst first'], ['name', 'by name']].forEach(function (o) {
      sort.appendChild(el('option', { value: o[0] }, o[1]));
    });
    var count = el('span', { class: 'count' });
    box.appendChild(search);
    box.appendChild(failuresLabel);
    box.appendChild(sort);
    box.appendChild(count);
    function apply() {
      var needle = search.value.trim().toLowerCase();
      var shown = 0;
      rows.forEach(function (row) {
        var name = (row.getAttribute('data-target') || '').toLowerCase();
        var verdict = row.getAttribute('data-verdict');
        var bad = verdict !== 'reproducible' && verdict !== 'skipped';
        var visible = (!needle || name.indexOf(needle) !== -1) && (!failures.checked || bad);
        row.hidden = !visible;
        if (visible) shown++;
      });
      var key = sort.value;
      var ordered = rows.slice().sort(function (a, b) {
        var ia = Number(a.getAttribute('data-index')), ib = Number(b.getAttribute('data-index'));
        if (key === 'severity') {
          var sa = severity[a.getAttribute('data-verdict')], sb = severity[b.getAttribute('data-verdict')];
          if (sa !== sb) return (sa === undefined ? 9 : sa) - (sb === undefined ? 9 : sb);
        } else if (key === 'name') {
          var na = a.getAttribute('data-target') || '', nb = b.getAttribute('data-target') || '';
          if (na !== nb) return na < nb ? -1 : 1;
        }
        return ia - ib;
      });
      ordered.forEach(function (row) { body.appendChild(row); });
      count.textContent = shown + ' of ' + rows.length + ' targets';
    }
    search.addEventListener('input', apply);
    failures.addEventListener('change', apply);
    sort.addEventListener('change', apply);
    apply();
  }

  // Details: expand or collapse every target at once.
  function setUpDetails() {
    var box = doc.getElementById('details-controls');
    var targets = all('details.target');
    if (!box || targets.length === 0) return;
    var expand = el('button', { type: 'button' }, 'expand all');
    var collapse = el('button', { type: 'button' }, 'collapse all');
    var failures = el('button', { type: 'button' }, 'expand failures only');
    expand.addEventListener('click', function () { targets.forEach(function (d) { d.open = true; }); });
    collapse.addEventListener('click', function () { targets.forEach(function (d) { d.open = false; }); });
    failures.addEventListener('click', function () {
      targets.forEach(function (d) {
        var v = d.getAttribute('data-verdict');
        d.open = v !== 'reproducible' && v !== 'skipped';
      });
    });
    box.appendChild(expand);
    box.appendChild(collapse);
    box.appendChild(failures);
  }

  // A link into a closed <details> opens it (and every <details> around it).
  function reveal(id) {
    if (!id) return;
    var target = doc.getElementById(id);
    for (var e = target; e; e = e.parentElement) if (e.tagName === 'DETAILS') e.open = true;
    if (target && target.scrollIntoView) target.scrollIntoView();
  }
  function hashId() {
    try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return ''; }
  }

  // Printing shows everything; what was closed closes again afterwards.
  var closedForPrint = [];
  function beforePrint() {
    closedForPrint = all('details:not([open])');
    closedForPrint.forEach(function (d) { d.open = true; });
  }
  function afterPrint() {
    closedForPrint.forEach(function (d) { d.open = false; });
    closedForPrint = [];
  }

  // The fix tables' cost cells, from the timing section (where every clock figure lives).
  function copyCosts() {
    var costs = {};
    all('#timing tr.fix-cost[data-cost]').forEach(function (row) {
      costs[row.getAttribute('data-fix')] = row.getAttribute('data-cost');
    });
    all('td.cost[data-fix]').forEach(function (cell) {
      var cost = costs[cell.getAttribute('data-fix')];
      if (cost === undefined) return;
      cell.textContent = cost + '\u00d7';
      cell.title = 'measured: median run time against the failing configuration (see Timing)';
    });
  }

  setUpMatrix();
  setUpDetails();
  copyCosts();
  doc.addEventListener('click', function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest('a[href^="#"]') : null;
    if (a) reveal(a.getAttribute('href').slice(1));
  });
  window.addEventListener('hashchange', function () { reveal(hashId()); });
  window.addEventListener('beforeprint', beforePrint);
  window.addEventListener('afterprint', afterPrint);
  if (location.hash) reveal(hashId());
  doc.body.setAttribute('data-js', 'ready');
})();
