import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentationFiles, documentedShBlocks, headingAnchor, root } from '../helpers/doc-blocks.ts';

/**
 * README.md is a front door and docs/ holds the rest, by reader (issue 25). Their curls are run
 * against `npm start` by tests/e2e/readme.test.ts; this holds the map and the links together.
 */
const files = await documentationFiles();
const texts = new Map(
  await Promise.all(
    files.map(async (file) => [file, await readFile(path.join(root, file), 'utf8')] as const),
  ),
);
const readme = texts.get('README.md')!;

/** The anchors of a markdown file's headings, code blocks left out. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    else if (!inCode && /^#{1,6} /.test(line)) found.add(headingAnchor(line.replace(/^#+ /, '').trim()));
  }
  return found;
}

describe('the documentation', () => {
  it('has a README of at most 200 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });

  it("names every docs file in the README's map", () => {
    const docs = files.filter((file) => file.startsWith('docs/'));

    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) expect(readme, `README.md does not link ${doc}`).toContain(`](${doc})`);
  });

  it.each(files)('%s links only to files and headings that exist', async (file) => {
    const text = texts.get(file)!;
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
    const local = links.filter((link) => !/^[a-z]+:/.test(link));

    expect(local.length).toBeGreaterThan(0);
    for (const link of local) {
      const [target = '', anchor] = link.split('#');
      const resolved = target === '' ? path.join(root, file) : path.resolve(root, path.dirname(file), target);
      expect(existsSync(resolved), `${file} links to ${link}, which does not exist`).toBe(true);
      if (anchor !== undefined) {
        expect(resolved.endsWith('.md'), `${file}: ${link} points into a file without headings`).toBe(true);
        const headings = anchors(await readFile(resolved, 'utf8'));
        expect([...headings], `${file} links to ${link}, a heading that does not exist`).toContain(anchor);
      }
    }
  });

  it("deploys in the README exactly as docs/operator.md's Deploy says", async () => {
    const blocks = await documentedShBlocks();
    const deploy = (key: string) => blocks.find((block) => block.key === key)?.text;

    expect(deploy('README.md "Deploy"')).toBeDefined();
    expect(deploy('README.md "Deploy"')).toBe(deploy('docs/operator.md "Deploy"'));
  });
});
