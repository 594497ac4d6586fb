// The tune HTML report in a real browser (issue 14 §6): runs the demo study on the twin, loads its
// report.html in headless Chromium (Debian's `chromium`) through Playwright (`playwright-core`, both installed
// by scripts/deps.sh), and checks: no console error, no page error, no network request (the page is offline:
// Chart.js is inlined) and no failed request; the summary (recommended command) is in the first screen; every
// canvas holds a Chart.js chart with data points and titled axes; every failed trial of the objective
// scenario is marked in the per-trial chart; the trial table sorts when a header is clicked (both
// directions, numbers and text); the copy button answers. Writes report.png next to the report.
// Readable charts (issue 30 §3): no axis shows more than 40 labelled x ticks (the per-trial chart of the demo's
// ~500 trials is paged, and its buttons move the page); failure marks have a colour no engine or configuration
// has; a configuration keeps one colour on every chart of a page and two configurations never share one; the
// SLO study's latency-against-load charts draw its SLO thresholds, its TPOT charts the statistic the SLO bounds,
// and its objective chart is named after its objective (goodput, req/s) with the summary's value; every link
// of a page is to a file that exists. One screenshot per chart kind: chart-<kind>.png beside each report.
//
// Usage: node report_browser_test.mjs SERVELAB_BINARY SOURCE_DIR WORK_DIR
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import {createRequire} from 'node:module';
import os from 'node:os';
import path from 'node:path';

const [binary, sourceDir, workDir] = process.argv.slice(2);
if (!binary || !sourceDir || !workDir) {
  console.error('usage: node report_browser_test.mjs SERVELAB_BINARY SOURCE_DIR WORK_DIR');
  process.exit(2);
}
// playwright-core lives in servelab's npm cache (scripts/deps.sh), as the other npm test tools.
const cache = process.env.SERVELAB_CACHE_DIR ||
              path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'servelab');
const require = createRequire(path.join(cache, 'npm', 'package.json'));
const {chromium} = require('playwright-core');
const chromiumPath = '/usr/bin/chromium';
assert.ok(fs.existsSync(chromiumPath), `${chromiumPath} is missing: run make deps (scripts/deps.sh installs chromium)`);

const t0 = Date.now();
const out = path.join(workDir, 'demo');
fs.rmSync(out, {recursive: true, force: true});
execFileSync(binary, ['tune', path.join(sourceDir, 'studies', 'deepseek-v3.2-h200x8.toml'), '--target', 'twin',
                      '--out', out], {cwd: sourceDir, stdio: ['ignore', 'ignore', 'pipe']});
const report = path.join(out, 'report.html');
assert.ok(fs.existsSync(report), 'tune wrote no report.html');
const trials = JSON.parse(fs.readFileSync(path.join(out, 'trials.json'), 'utf8'));
const objectiveScenario = 'sharegpt-1000';
const failedTrials = trials.filter(t => t.status !== 'ok').length;
assert.ok(failedTrials > 0, 'the demo study is expected to have failed trials (the chart must mark them)');

const browser = await chromium.launch({executablePath: chromiumPath, headless: true,
                                       args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
let checks = 0;

// Every chart of `page` as Chart.js drew it: datasets with their colour, key and dash, and the labelled x ticks.
const chartState = page => page.evaluate(() => [...document.querySelectorAll('canvas')].map(c => {
  const ch = Chart.getChart(c);
  if (!ch) return {id: c.id, chart: false, title: '', datasets: [], ticks: []};
  const count = ds => ds.data.filter(v => v !== null && v !== undefined).length;
  return {id: c.id, chart: true, type: ch.config.type, title: ch.options.plugins.title.text,
          xTitle: ch.options.scales.x.title.text, yTitle: ch.options.scales.y.title.text,
          ticks: ch.scales.x.ticks.map(t => ch.scales.x.getLabelForValue(t.value)),
          datasets: ch.data.datasets.map(ds => ({label: ds.label, key: ds.slKey, points: count(ds),
                                                colour: ds.borderColor, dash: ds.borderDash || [],
                                                data: ds.data}))};
}));

// At most 40 labelled x ticks on every chart.
const assertReadableTicks = charts => {
  for (const c of charts) assert.ok(c.ticks.length <= 40, `${c.title}: ${c.ticks.length} labelled x ticks`);
};

// Failure marks and thresholds in colours of their own; one colour per configuration / engine key across
// the charts of a page, never two keys in one colour. Returns the number of keys.
const assertColours = charts => {
  const colourOf = new Map(), keyOf = new Map(), failure = new Set(), threshold = new Set();
  for (const c of charts)
    for (const d of c.datasets) {
      if (d.key === 'failure') { failure.add(d.colour); continue; }
      if (d.key === 'threshold') { threshold.add(d.colour); continue; }
      if (d.key === undefined) continue;  // the Pareto front and the recommended star
      assert.ok(!colourOf.has(d.key) || colourOf.get(d.key) === d.colour,
                `${d.key} is ${colourOf.get(d.key)} on one chart and ${d.colour} on ${c.title}`);
      assert.ok(!keyOf.has(d.colour) || keyOf.get(d.colour) === d.key,
                `${d.key} and ${keyOf.get(d.colour)} share the colour ${d.colour}`);
      colourOf.set(d.key, d.colour);
      keyOf.set(d.colour, d.key);
    }
  for (const f of [...failure, ...threshold])
    assert.ok(!keyOf.has(f), `failure/threshold colour ${f} is also ${keyOf.get(f)}'s`);
  for (const f of failure) assert.ok(!threshold.has(f), 'failure marks and thresholds share a colour');
  return colourOf.size;
};

// Every href of the page (not '#...') names a file that exists, relative to the report's directory.
const assertLinksExist = async (page, dir) => {
  const hrefs = await page.evaluate(() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')));
  for (const h of hrefs.filter(h => !h.startsWith('#')))
    assert.ok(fs.existsSync(path.resolve(dir, decodeURIComponent(h))), `link to a missing file: ${h}`);
  return hrefs.length;
};

// One screenshot per chart kind (bar, scatter, line...) of `charts`, as chart-<kind>.png in `dir`.
const screenshotKinds = async (page, charts, dir, kinds) => {
  for (const c of charts) {
    const kind = c.datasets.some(d => d.key === 'threshold') ? 'line-slo'
               : c.type === 'bar' ? 'bar' : c.title.includes('distribution') ? 'cdf'
               : c.title.startsWith('Output tok/s per GPU against') ? 'pareto'
               : c.title.includes(' against ') && c.xTitle.startsWith('concurrency') ? 'line-load' : 'scatter';
    if (kinds.has(kind)) continue;
    const file = path.join(dir, `chart-${kind}.png`);
    await page.locator(`#${c.id}`).screenshot({path: file});
    assert.ok(fs.statSync(file).size > 5000, `${file} is empty`);
    kinds.set(kind, file);
  }
};

try {
  const page = await browser.newPage({viewport: {width: 1280, height: 900}});
  const consoleErrors = [], pageErrors = [], failedRequests = [], networkRequests = [];
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', e => pageErrors.push(String(e)));
  page.on('requestfailed', r => failedRequests.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on('request', r => { if (!r.url().startsWith('file://')) networkRequests.push(r.url()); });
  await page.goto('file://' + path.resolve(report), {waitUntil: 'load'});

  // 1. The summary comes first: the recommended command is on the first screen.
  const firstH2 = await page.locator('h2').first().textContent();
  assert.equal(firstH2, 'Summary'); checks++;
  const cmdBox = await page.locator('#cmd-recommended').boundingBox();
  assert.ok(cmdBox && cmdBox.y < 900, `recommended command at y=${cmdBox?.y}, below the first screen`); checks++;
  const cmdText = await page.locator('#cmd-recommended').textContent();
  assert.match(cmdText, /sglang\.launch_server|vllm serve|trtllm-serve/); checks++;

  // 2. Every canvas holds a chart with data points and titled axes.
  const charts = await page.evaluate(() => [...document.querySelectorAll('canvas')].map(c => {
    const ch = Chart.getChart(c);
    if (!ch) return {id: c.id, chart: false};
    const count = ds => ds.data.filter(v => v !== null && v !== undefined).length;
    return {id: c.id, chart: true, type: ch.config.type, title: ch.options.plugins.title.text,
            points: ch.data.datasets.reduce((n, ds) => n + count(ds), 0),
            datasets: ch.data.datasets.map(ds => ({label: ds.label, points: count(ds)})),
            xTitle: ch.options.scales.x.title.display ? ch.options.scales.x.title.text : '',
            yTitle: ch.options.scales.y.title.display ? ch.options.scales.y.title.text : ''};
  }));
  assert.ok(charts.length >= 4, `expected at least 4 charts, found ${charts.length}`); checks++;
  for (const c of charts) {
    assert.ok(c.chart, `canvas ${c.id} has no chart`);
    assert.ok(c.points > 0, `chart ${c.id} (${c.title}) has no data point`);
    assert.ok(c.xTitle && c.yTitle, `chart ${c.id} (${c.title}) has an untitled axis`);
    checks++;
  }
  // 3. The per-trial chart marks every failed trial (one cross each) next to the bars of the others.
  const perTrial = charts.find(c => c.title.includes('per trial'));
  assert.ok(perTrial, 'no per-trial chart');
  const marks = perTrial.datasets.find(d => d.label.startsWith('failed trial'));
  assert.ok(marks, 'the per-trial chart has no failure series');
  assert.equal(marks.points, failedTrials, 'every failed trial is marked once'); checks++;
  const okBars = trials.filter(t => t.status === 'ok' && t.scenarios[objectiveScenario]).length;
  assert.equal(perTrial.points - marks.points, okBars, 'one bar per successful trial of the objective scenario'); checks++;
  const failTicks = await page.evaluate(() => {
    const ch = Chart.getChart(document.querySelector('canvas'));
    return ch.data.labels.filter(l => / (oom|rejected|startup_refused|crashed|requests_failed|not_ready|error|invalid)$/.test(l)).length;
  });
  assert.equal(failTicks, failedTrials, 'every failure tick names its class'); checks++;

  // 3b. Readable: <= 40 labelled ticks (the per-trial chart is paged), failure marks in their own colour,
  // engines in theirs on every chart; the pager moves the window.
  const drawn = await chartState(page);
  assertReadableTicks(drawn); checks++;
  assertColours(drawn); checks++;
  const failureMark = drawn.find(c => c.title.includes('per trial')).datasets.find(d => d.key === 'failure');
  assert.equal(failureMark.colour, '#000000', 'failure marks are black'); checks++;
  assert.ok(perTrial.points > 40, 'the demo has more trials than one page');
  const pageText = () => page.locator('.page-text').first().textContent();
  assert.equal((await pageText()).trim(), `trials 1–40 of ${perTrial.points}`); checks++;
  const firstTicks = drawn.find(c => c.title.includes('per trial')).ticks;
  assert.deepEqual(firstTicks, (await page.evaluate(() => Chart.getChart(document.querySelector('canvas')).data.labels)).slice(0, 40));
  await page.locator('.page-next').first().click();
  assert.equal((await pageText()).trim(), `trials 41–80 of ${perTrial.points}`); checks++;
  const nextTicks = (await chartState(page)).find(c => c.title.includes('per trial')).ticks;
  assert.equal(nextTicks.length, 40);
  assert.ok(nextTicks[0].startsWith('#41'), `second page starts at ${nextTicks[0]}`); checks++;
  await page.locator('.page-prev').first().click();
  assert.equal((await pageText()).trim(), `trials 1–40 of ${perTrial.points}`); checks++;
  assert.equal(await assertLinksExist(page, out), 2, 'the twin demo links trials.csv and trials.json only'); checks++;
  const kinds = new Map();
  await screenshotKinds(page, drawn, out, kinds);

  // 4. The trial table sorts on a header click, both ways; empty cells stay last.
  const table = page.locator('#trial-table');
  const header = name => table.locator('thead th', {hasText: name}).first();
  const column = async (index, numeric) => page.evaluate(([i, n]) =>
      [...document.querySelectorAll('#trial-table tbody tr')].map(tr => {
        const c = tr.cells[i];
        return n ? (c.dataset.v === undefined ? null : Number(c.dataset.v)) : c.textContent;
      }), [index, numeric]);
  const heads = await table.locator('thead th').allTextContents();
  const metricCol = heads.indexOf('Total Token throughput (tok/s)');
  assert.ok(metricCol > 0, `no objective column in ${heads}`);
  const rows = (await column(0, true)).length;
  assert.ok(rows >= trials.length, `table has ${rows} rows for ${trials.length} trials`); checks++;
  const sortedBy = (xs, dir) => {
    const vals = xs.filter(v => v !== null);
    const firstNull = xs.indexOf(null);
    if (firstNull >= 0) assert.ok(xs.slice(firstNull).every(v => v === null), 'empty cells are not last');
    for (let i = 1; i < vals.length; ++i) assert.ok(dir * (vals[i] - vals[i - 1]) >= 0, `not sorted at ${i}: ${vals}`);
    return vals.length;
  };
  await header('Total Token throughput (tok/s)').click();
  const asc = await column(metricCol, true);
  assert.ok(sortedBy(asc, +1) > 10); checks++;
  await header('Total Token throughput (tok/s)').click();
  const desc = await column(metricCol, true);
  sortedBy(desc, -1); checks++;
  assert.equal(desc[0], Math.max(...asc.filter(v => v !== null))); checks++;
  assert.equal(await header('Total Token throughput (tok/s)').getAttribute('aria-sort'), 'descending'); checks++;
  await header('engine').click();
  const engines = await column(heads.indexOf('engine'), false);
  for (let i = 1; i < engines.length; ++i) assert.ok(engines[i - 1].localeCompare(engines[i]) <= 0, 'engine column not sorted');
  assert.notEqual(engines[0], engines[engines.length - 1], 'more than one engine'); checks++;
  await header('#').click();
  await header('#').click();
  const ids = await column(0, true);
  assert.deepEqual(ids, [...ids].sort((a, b) => b - a)); checks++;

  // 5. The copy button answers (clipboard or the textarea fallback), without an error.
  await page.locator('button.copy').first().click();
  await page.waitForFunction(() => document.querySelector('button.copy').textContent !== 'copy', null,
                             {timeout: 10000});  // the clipboard answers asynchronously
  const answer = await page.locator('button.copy').first().textContent();
  assert.ok(answer === 'copied' || answer.startsWith('copy failed'), `copy button says ${answer}`); checks++;

  // 6. Raw bench blocks are folded.
  const folded = await page.locator('details.raw').count();
  const openPre = await page.evaluate(() => [...document.querySelectorAll('pre')].filter(p =>
      !p.closest('details') && p.textContent.includes('Serving Benchmark Result')).length);
  assert.ok(folded > 0 && openPre === 0, `bench blocks: ${folded} folded, ${openPre} open`); checks++;

  await page.screenshot({path: path.join(out, 'report.png'), fullPage: true});
  assert.ok(fs.statSync(path.join(out, 'report.png')).size > 10000, 'screenshot is empty'); checks++;

  assert.deepEqual(consoleErrors, [], 'console errors'); checks++;
  assert.deepEqual(pageErrors, [], 'page errors'); checks++;
  assert.deepEqual(failedRequests, [], 'failed requests'); checks++;
  assert.deepEqual(networkRequests, [], 'network requests (the page must work offline)'); checks++;

  // 7. The load study (studies/deepseek-v3.2-h200x8-slo.toml: [load] sweep, [slo], Pareto objective): its
  // page charts throughput / TTFT / TPOT against concurrency per configuration and the tok/s/GPU vs
  // tok/s/user plane with the Pareto front and the recommended point; still no console error.
  const sloOut = path.join(workDir, 'slo');
  fs.rmSync(sloOut, {recursive: true, force: true});
  execFileSync(binary, ['tune', path.join(sourceDir, 'studies', 'deepseek-v3.2-h200x8-slo.toml'), '--target', 'twin',
                        '--out', sloOut], {cwd: sourceDir, stdio: ['ignore', 'ignore', 'pipe']});
  const sloPage = await browser.newPage({viewport: {width: 1280, height: 900}});
  sloPage.on('console', m => { if (m.type() === 'error') consoleErrors.push('slo: ' + m.text()); });
  sloPage.on('pageerror', e => pageErrors.push('slo: ' + String(e)));
  sloPage.on('request', r => { if (!r.url().startsWith('file://')) networkRequests.push(r.url()); });
  await sloPage.goto('file://' + path.resolve(path.join(sloOut, 'report.html')), {waitUntil: 'load'});
  const loadCharts = await sloPage.evaluate(() => [...document.querySelectorAll('canvas')].map(c => {
    const ch = Chart.getChart(c);
    if (!ch) return {id: c.id, chart: false, title: ''};
    const count = ds => ds.data.filter(v => v !== null && v !== undefined).length;
    return {id: c.id, chart: true, title: ch.options.plugins.title.text,
            datasets: ch.data.datasets.map(ds => ({label: ds.label, points: count(ds)})),
            xTitle: ch.options.scales.x.title.text, yTitle: ch.options.scales.y.title.text};
  }));
  for (const c of loadCharts) {
    assert.ok(c.chart && c.datasets.some(d => d.points > 0), `slo report: chart ${c.id} (${c.title}) has no data`);
  }
  for (const what of ['Output token throughput', 'TTFT', 'TPOT']) {
    const c = loadCharts.find(x => x.title.startsWith(what) && x.title.includes('against concurrency'));
    assert.ok(c, `slo report: no ${what} against concurrency chart in ${loadCharts.map(x => x.title)}`);
    const lines = c.datasets.filter(d => d.points >= 2);
    assert.ok(lines.length >= 2, `${c.title}: ${lines.length} curves with >= 2 load points`); checks++;
  }
  const pareto = loadCharts.find(x => x.title.startsWith('Output tok/s per GPU against output tok/s per user'));
  assert.ok(pareto, 'slo report: no Pareto chart');
  assert.ok(pareto.datasets.find(d => d.label === 'Pareto front')?.points >= 2, 'Pareto front has < 2 points'); checks++;
  assert.equal(pareto.datasets.find(d => d.label === 'recommended')?.points, 1, 'recommended point not marked'); checks++;

  // 8. The SLO study's page says what it measured and draws what bounds it.
  const sloDrawn = await chartState(sloPage);
  assertReadableTicks(sloDrawn); checks++;
  const configs = assertColours(sloDrawn);
  assert.ok(configs >= 6, `${configs} colour keys on the SLO page`); checks++;
  const sloText = await sloPage.locator('#summary').textContent();
  assert.ok(!/maximise\s+Total Token throughput/.test(sloText), 'the goodput study names throughput as its objective');
  assert.match(sloText, /Objective: maximise\s+Request goodput under the SLOs \(req\/s\)/); checks++;
  const goodput = sloDrawn.find(c => c.title.startsWith('Request goodput under the SLOs (req/s) (predicted) per configuration'));
  assert.ok(goodput, `no goodput chart in ${sloDrawn.map(c => c.title)}`);
  assert.equal(goodput.yTitle, 'Request goodput under the SLOs (req/s)'); checks++;
  const recValue = Number((await sloPage.locator('#cmd-recommended + p b').textContent()).split(' ')[0]);
  const bestBar = Math.max(...goodput.datasets.filter(d => d.key !== 'failure').flatMap(d => d.data.filter(v => v !== null)));
  assert.equal(bestBar.toFixed(2), recValue.toFixed(2), 'the goodput chart tops at the summary\'s value'); checks++;
  for (const [what, slo, stat] of [['TTFT', 'SLO: P99 TTFT ≤ 2000 ms', ' p99'], ['TPOT', 'SLO: Mean TPOT ≤ 50 ms', ' mean']]) {
    for (const load of ['concurrency', 'request rate']) {
      const c = sloDrawn.find(x => x.title.startsWith(what) && x.title.includes('against ' + load));
      assert.ok(c, `no ${what} against ${load} chart`);
      const line = c.datasets.find(d => d.key === 'threshold');
      assert.ok(line, `${c.title}: no SLO threshold`);
      assert.equal(line.label, slo);
      assert.ok(line.data.length === 2 && line.data.every(p => p.y === Number(slo.match(/≤ (\d+)/)[1])), `${c.title}: ${JSON.stringify(line.data)}`);
      assert.equal(line.colour, '#666666');
      assert.ok(c.datasets.some(d => d.label.endsWith(stat) && d.points > 0), `${c.title}: no${stat} line for the SLO's statistic`);
      checks++;
    }
  }
  const tpot = sloDrawn.find(x => x.title.startsWith('TPOT') && x.title.includes('against request rate'));
  const dashOf = suffix => tpot.datasets.find(d => d.label.endsWith(suffix)).dash.join(',');
  assert.deepEqual([dashOf(' p50'), dashOf(' p99'), dashOf(' mean')], ['', '7,4', '2,3'], 'a dash per statistic'); checks++;
  assert.equal(await assertLinksExist(sloPage, sloOut), 2, 'the twin study links no engine log'); checks++;
  await screenshotKinds(sloPage, sloDrawn, sloOut, kinds);
  for (const kind of ['bar', 'scatter', 'cdf', 'line-load', 'line-slo', 'pareto'])
    assert.ok(kinds.has(kind), `no screenshot of a ${kind} chart (${[...kinds.keys()]})`);
  checks++;

  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  console.log(`report_browser_test: ${checks} checks passed; ${charts.length} charts, ${rows} table rows, ` +
              `${failedTrials} failures marked, page ${height} px high, ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
              `screenshots ${path.join(out, 'report.png')}, ${[...kinds.values()].join(', ')}`);
} finally {
  await browser.close();
}
