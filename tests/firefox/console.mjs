// The admin console in Firefox ESR (Debian's), driven by puppeteer-core over WebDriver BiDi:
// the standard protocol, so the stock browser needs no patches. A smaller walk than the
// Chromium one (tests/console/console.mjs): what differs between engines is rendering, ES
// modules, cookies and the DOM, not the API behind them. The world comes from
// tests/e2e/console.rs in $WORLD. Prints "N passed, M failed".

import puppeteer from 'puppeteer-core';
import { base, expect, finish, step, world } from '../console/steps.mjs';

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr',
  headless: true,
});
const errors = [];

const page = await browser.newPage();
await page.setViewport({ width: 1200, height: 800 });
// Puppeteer's 30 s default is short for a first render of Firefox on a loaded 2-core machine.
page.setDefaultTimeout(60_000);
page.on('pageerror', (e) => errors.push(String(e)));

// The control a label names (the console labels every field).
async function field(label) {
  const id = await page.waitForFunction((text) => {
    const found = [...document.querySelectorAll('label')].find((l) => l.textContent.trim() === text);
    return found && found.htmlFor;
  }, {}, label);
  return `#${await id.jsonValue()}`;
}

async function shot(name) {
  await page.screenshot({ path: `${world.screenshots}/${name}-firefox.png`, fullPage: true });
}

await step('a one-time link signs the owner in, with a locked-down session cookie', async () => {
  await page.goto(world.owner_link);
  await page.waitForFunction(() => location.pathname === '/console' && document.querySelector('h1')?.textContent === 'Your teams');
  const cookie = (await browser.cookies()).find((c) => c.name === 'hermes_console');
  expect(cookie && cookie.httpOnly && cookie.secure && cookie.sameSite === 'Lax', `cookie flags: ${JSON.stringify(cookie)}`);
  expect(!page.url().includes('#'), 'the token is gone from the address bar');
});

const pages = ['', '/members', '/keys', '/audit', '/sessions', '/usage', '/automation', '/agents'];
for (const [lang, membersLabel] of [['en', 'Members'], ['zh', '成员']]) {
  await step(`every page renders in ${lang}, with screenshots`, async () => {
    await page.evaluate((l) => localStorage.setItem('hermes.lang', l), lang);
    for (const path of pages) {
      await page.goto(`${base}/console/t/${world.tenant}${path}`);
      await page.waitForFunction((label) => [...document.querySelectorAll('nav.tabs a')].some((a) => a.textContent === label), {}, membersLabel);
      await page.waitForSelector('main section > *');
      expect(await page.$('[role=alert]') === null, `${path || 'overview'} shows no error`);
      await shot(`${(path || '/overview').slice(1)}-${lang}`);
    }
  });
}

await step('XSS payloads in a transcript show as text and do nothing', async () => {
  await page.evaluate(() => localStorage.setItem('hermes.lang', 'en'));
  await page.goto(`${base}/console/t/${world.tenant}/sessions`);
  await page.waitForSelector('main table a');
  await page.click('main table a');
  await page.waitForSelector('[data-testid=message]');
  const text = await page.$eval('main', (m) => m.textContent);
  expect(text.includes("<script>window.__pwned = 'script'</script>"), 'the script tag shows as text');
  expect(await page.evaluate(() => window.__pwned) === undefined, 'no payload ran');
  expect(await page.$$eval('main script, main img, main iframe, a[href^="javascript:"]', (n) => n.length) === 0, 'no element was made from the text');
  await shot('transcript-en');
});

await step('the owner makes an API key and it works on the API', async () => {
  await page.goto(`${base}/console/t/${world.tenant}/keys`);
  await page.type(await field('Name'), 'firefox key');
  await page.locator('button ::-p-text(Create)').click();
  const key = await page.waitForFunction(() => document.querySelector('[data-testid=secret]')?.textContent.trim());
  const secret = await key.jsonValue();
  expect(secret.startsWith('hk_'), `a key is shown: ${secret}`);
  const models = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
  expect(models.status === 200, `the key works: ${models.status}`);
});

await step('the sessions page finds a conversation by what was said', async () => {
  await page.goto(`${base}/console/t/${world.tenant}/sessions`);
  await page.type(await field('Words said'), 'anchor');
  await page.locator('button ::-p-text(Search)').click();
  await page.waitForFunction(() => location.search.includes('q=') && document.querySelector('[data-testid=session-row]'));
});

await step('signing out ends the session', async () => {
  await page.goto(`${base}/console`);
  await page.locator('button ::-p-text(Sign out)').click();
  await page.waitForFunction(() => location.pathname === '/console/sign-in');
  await page.goto(`${base}/console/t/${world.tenant}`);
  await page.waitForFunction(() => location.pathname === '/console/sign-in');
});

process.exit(await finish(browser, errors));
