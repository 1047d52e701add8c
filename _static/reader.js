/* Boxes that scroll sideways (long formulas, code, outputs) get the classes reader-more-left and
   reader-more-right while they hide content on that side; reader.css draws a shadow there. Phones draw
   no scrollbar, so without it a long formula looks cut off. */
(() => {
  const SCROLLING = "div.math mjx-container, div.highlight pre";   // inline formulas: too short to need it

  const SLACK = 8;   // px: a subscript's or an italic letter's overhang (M_k, f) is not a hidden part of a formula

  function mark(box) {
    const hidden = box.scrollWidth - box.clientWidth;
    box.classList.toggle("reader-more-left", hidden > SLACK && box.scrollLeft > 1);
    box.classList.toggle("reader-more-right", hidden > SLACK && box.scrollLeft < hidden - 1);
  }
  // An inline formula whose glyphs overhang its box by a fraction of a pixel or a few (a radical, an italic
  // letter) would draw a scrollbar under itself in browsers that show scrollbars: widen its box by the overhang.
  // A formula wider than that really is too long for the column (on a phone) and keeps its scroll box.
  function fit(formula) {
    formula.style.paddingRight = "";
    const overhang = formula.scrollWidth - formula.clientWidth;
    if (overhang > 0 && overhang <= SLACK) formula.style.paddingRight = `${overhang}px`;
  }
  const markAll = () => {
    document.querySelectorAll("span.math").forEach(fit);
    document.querySelectorAll(SCROLLING).forEach(mark);
  };

  document.addEventListener("scroll", (event) => {
    if (event.target instanceof Element && event.target.matches(SCROLLING)) mark(event.target);
  }, true);    // scroll events do not bubble: listen while they travel down
  window.addEventListener("resize", markAll);
  window.addEventListener("load", () => {
    const typeset = window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve();
    // MathJax draws the formulas after the page has loaded, and their glyphs take their final widths once its
    // fonts have loaded
    typeset.then(() => document.fonts.ready).then(markAll);
  });
})();
