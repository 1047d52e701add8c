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
  const markAll = () => document.querySelectorAll(SCROLLING).forEach(mark);

  document.addEventListener("scroll", (event) => {
    if (event.target instanceof Element && event.target.matches(SCROLLING)) mark(event.target);
  }, true);    // scroll events do not bubble: listen while they travel down
  window.addEventListener("resize", markAll);
  window.addEventListener("load", () => {
    const typeset = window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve();
    typeset.then(markAll);     // MathJax draws the formulas after the page has loaded
  });
})();
