// @ts-check
/**
 * TypeDoc plugin of the docs site (typedoc.json `plugin`), for the markdown documents it includes
 * (`projectDocuments`: the guides, the contract, the glossary, the architecture):
 *
 * - a document without a frontmatter `title` is named by its first `# ` heading (TypeDoc would
 *   name it by its file name: "contract"), and is put in the group "Guides" (docs/guides/) or
 *   "Reference" (the others), so the markdown stays free of frontmatter and reads the same on GitHub;
 * - explicit anchors written as HTML, `<a id="promise-3"></a>` (docs/contract.md), are registered
 *   on their page, so TypeDoc's link validation accepts `contract.md#promise-3` as it accepts a
 *   heading's anchor (TypeDoc 0.28 knows only heading anchors and warns; the site treats warnings
 *   as errors). Browsers find them either way: TypeDoc keeps the HTML.
 */
import { Converter, Renderer } from 'typedoc';

const HTML_ANCHOR = /<a\s+(?:id|name)="([^"]+)"\s*>/g;

/** The document's text (its display parts joined). @param {{ content: readonly { text: string }[] }} doc */
const textOf = (doc) => doc.content.map((part) => part.text).join('');

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DOCUMENT, (_context, doc) => {
    const heading = /^# (.+)$/m.exec(textOf(doc));
    if (heading && !('title' in doc.frontmatter)) doc.name = heading[1].trim();
    const file = doc.project.files.getReflectionPath(doc) ?? '';
    if (!('group' in doc.frontmatter)) doc.frontmatter.group = /(^|\/)docs\/guides\//.test(file.replaceAll('\\', '/')) ? 'Guides' : 'Reference';
  });

  app.renderer.on(Renderer.EVENT_BEGIN_PAGE, (page) => {
    const model = /** @type {any} */ (page.model);
    const isDocument = typeof model?.isDocument === 'function' && model.isDocument();
    const isIndex = model?.isProject?.() === true;
    const text = isDocument ? textOf(model) : isIndex ? (model.readme ?? []).map((/** @type {{ text: string }} */ p) => p.text).join('') : '';
    if (text === '') return;
    const slugger = app.renderer.router?.getSlugger(model);
    if (!slugger) return;
    for (const match of text.matchAll(HTML_ANCHOR)) {
      if (!slugger.hasAnchor(match[1])) slugger.slug(match[1]);
    }
  });
}
