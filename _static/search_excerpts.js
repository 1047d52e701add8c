/* Search results: the excerpt under each hit comes from the page's text (Sphinx's searchtools.js
   fetches the page and reads its [role="main"] element). In this theme that element also holds the
   download menu (".ipynb .md .pdf"), the header buttons and the page's table of contents, so excerpts
   began "....ipynb .md .pdf ...". Read the article only. */
(() => {
  const ARTICLE = "article.bd-article";
  const DROP = [".headerlink", "script", "style"];

  function articleText(htmlString, anchor) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    DROP.forEach((selector) => doc.querySelectorAll(selector).forEach((el) => el.remove()));
    const article = doc.querySelector(ARTICLE) || doc.querySelector('[role="main"]');
    if (!article) return "";
    const part = anchor ? doc.getElementById(decodeURIComponent(anchor.replace(/^#/, ""))) : null;
    return (part && article.contains(part) ? part : article).textContent.replace(/\s+/g, " ").trim();
  }

  function install() {
    if (typeof Search !== "undefined") Search.htmlToText = articleText;   // only search.html loads it
  }
  install();
  document.addEventListener("DOMContentLoaded", install);   // searchtools.js may load after this file
})();
