// Checks a simulator timeline page (`simulator replay ... --html FILE`) in a
// real Chromium: no console error, no page error, no fetch but the page
// itself; the violation panel visible; every witness link, clicked, brings
// its event's element into view, outlined as a witness and focused. Then a
// planted broken copy of the page (a script that throws, a witness element
// gone) must fail the same checks, so a green run means the checks bite.
//
// usage: node check.mjs CHROMIUM PAGE.html SCREENSHOT.png

import { chromium } from 'playwright-core';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const VIEWPORT = { width: 1400, height: 900 };
// Witness links clicked at most (distinct events), to keep the run short.
const MAX_WITNESS_CLICKS = 40;

const [executablePath, pagePath, screenshotPath] = process.argv.slice(2);
if (!executablePath || !pagePath || !screenshotPath) {
  console.error('usage: node check.mjs CHROMIUM PAGE.html SCREENSHOT.png');
  process.exit(2);
}

/** The problems Chromium shows with the page at `file`; screenshot to `png` if given. */
async function check(browser, file, png) {
  const problems = [];
  const url = pathToFileURL(path.resolve(file)).href;
  const page = await browser.newPage({ viewport: VIEWPORT });
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (r.url() !== url && !r.url().startsWith('data:')) problems.push(`fetch: ${r.url()}`);
  });
  await page.goto(url, { waitUntil: 'load' });

  if (!(await page.locator('#violations .violation').first().isVisible())) {
    problems.push('no violation visible in the violations panel');
  }
  const seqs = [...new Set(await page.locator('a.witness-link').evaluateAll((as) => as.map((a) => a.dataset.seq)))];
  if (seqs.length === 0) problems.push('no witness links');
  for (const seq of seqs.slice(0, MAX_WITNESS_CLICKS)) {
    await page.locator(`a.witness-link[data-seq="${seq}"]`).first().click();
    const ev = page.locator(`[id="ev-${seq}"]`);
    if ((await ev.count()) !== 1) {
      problems.push(`witness seq ${seq}: no element #ev-${seq}`);
      continue;
    }
    if (!(await ev.isVisible())) problems.push(`witness seq ${seq}: its element is not visible`);
    const cls = (await ev.getAttribute('class')) || '';
    if (!/\bwitness\b/.test(cls)) problems.push(`witness seq ${seq}: not outlined as a witness (class "${cls}")`);
    if (!/\bfocus\b/.test(cls)) problems.push(`witness seq ${seq}: the link did not focus it`);
    const box = await ev.boundingBox();
    const inView = box && box.x >= 0 && box.y >= 0 && box.x + box.width <= VIEWPORT.width && box.y + box.height <= VIEWPORT.height;
    if (!inView) problems.push(`witness seq ${seq}: not scrolled into view (${JSON.stringify(box)})`);
  }
  // The controls run without errors too.
  for (const z of ['in', 'in', 'out', 'fit']) await page.locator(`[data-zoom="${z}"]`).click();
  await page.locator('#only-witness').check();
  await page.locator('#only-witness').uncheck();
  // The screenshot shows the first violation with the most witnesses, its
  // first witness focused.
  if (png && seqs.length > 0) {
    const counts = await page.locator('#violations .violation').evaluateAll((vs) =>
      vs.map((v) => v.querySelectorAll('a.witness-link').length));
    const best = counts.indexOf(Math.max(...counts));
    await page.locator('#violations .violation').nth(best).locator('a.witness-link').first().click();
    await page.screenshot({ path: png, animations: 'disabled' }); // the focus pulse at its end
  }
  await page.close();
  return problems;
}

const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
let failed = false;
try {
  const problems = await check(browser, pagePath, screenshotPath);
  for (const p of problems) console.error(`timeline: ${p}`);
  failed = problems.length > 0;
  // Self-test: the same checks must fail on a planted broken copy.
  const html = readFileSync(pagePath, 'utf8');
  const firstWitness = /data-seq="(\d+)"/.exec(html);
  const broken = html
    .replace('</body>', '<script>undefinedPlantedFunction();</script>\n</body>')
    .replace(firstWitness ? `id="ev-${firstWitness[1]}"` : '\u0000', 'id="ev-gone"');
  const brokenPath = pagePath.replace(/\.html$/, '') + '.broken.html';
  writeFileSync(brokenPath, broken);
  const caught = await check(browser, brokenPath, null);
  const wanted = [/page error: .*undefinedPlantedFunction/, /no element #ev-/];
  for (const w of wanted) {
    if (!caught.some((p) => w.test(p))) {
      console.error(`timeline self-test: the broken copy ${brokenPath} was not caught by ${w}; got ${JSON.stringify(caught)}`);
      failed = true;
    }
  }
} finally {
  await browser.close();
}
if (failed) process.exit(1);
console.log('timeline: page loads clean, violations and witnesses visible; broken copy caught');
