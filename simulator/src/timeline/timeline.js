// holdfast timeline: zoom, the witnesses-only filter, witness links that
// scroll to and highlight their event, and a detail box for any clicked item.
(function () {
  'use strict';
  var canvas = document.getElementById('canvas');
  var scroller = document.getElementById('timeline');
  var detail = document.getElementById('detail');
  var detailText = document.getElementById('detail-text');
  var zoomLabel = document.getElementById('zoom-level');
  var onlyWitness = document.getElementById('only-witness');
  if (!canvas || !scroller || !detail || !detailText) { return; }
  var zoom = 1;
  // A violation's witnesses are zoomed to fill about this share of the view...
  var WITNESS_SHARE = 0.6;
  // ...showing at least this much simulated time.
  var MIN_WINDOW_MS = 1000;
  var spanMs = Math.max(1, Number(canvas.getAttribute('data-span-ms')) || 1);
  var t0Ms = Number(canvas.getAttribute('data-t0-ms')) || 0;
  // Tick steps (ms), as the page's own; ticks at least this many px apart.
  var TICK_STEPS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000,
    60000, 120000, 300000, 600000, 1800000, 3600000];
  var TICK_MIN_PX = 64;

  function timeLabel(ms) {
    if (Math.abs(ms) < 1000) { return ms + ' ms'; }
    return (ms / 1000).toFixed(3).replace(/\.?0+$/, '') + ' s';
  }

  // Redraws the time axis for the current zoom.
  function drawTicks() {
    var axis = canvas.querySelector('.axis .track');
    if (!axis) { return; }
    var px = axis.getBoundingClientRect().width;
    if (!(px > 0)) { return; }
    var step = TICK_STEPS_MS[TICK_STEPS_MS.length - 1];
    for (var i = 0; i < TICK_STEPS_MS.length; i++) {
      if (TICK_STEPS_MS[i] * px / spanMs >= TICK_MIN_PX) { step = TICK_STEPS_MS[i]; break; }
    }
    var frag = document.createDocumentFragment();
    for (var t = Math.ceil(t0Ms / step) * step; t <= t0Ms + spanMs && frag.childNodes.length < 20000; t += step) {
      var tick = document.createElement('span');
      tick.className = 'tick';
      tick.style.left = ((t - t0Ms) / spanMs * 100) + '%';
      tick.textContent = timeLabel(t);
      frag.appendChild(tick);
    }
    axis.textContent = '';
    axis.appendChild(frag);
  }

  function setZoom(next) {
    var z = Math.min(256, Math.max(1, next));
    var centre = (scroller.scrollLeft + scroller.clientWidth / 2) / Math.max(1, scroller.scrollWidth);
    zoom = z;
    canvas.style.setProperty('--zoom', String(z));
    if (zoomLabel) { zoomLabel.textContent = z + '\u00d7'; }
    drawTicks();
    scroller.scrollLeft = centre * scroller.scrollWidth - scroller.clientWidth / 2;
  }

  function show(el) {
    detailText.textContent = el.getAttribute('title') || el.id;
    detail.hidden = false;
  }

  // Zooms so that `els` (a violation's witnesses) fill part of the view,
  // and scrolls their middle to the middle of the view.
  function zoomTo(els) {
    var lo = 100, hi = 0;
    for (var i = 0; i < els.length; i++) {
      var left = parseFloat(els[i].style.left) || 0;
      lo = Math.min(lo, left);
      hi = Math.max(hi, left + (parseFloat(els[i].style.width) || 0));
    }
    if (hi < lo) { return; }
    var share = Math.max((hi - lo) / 100, MIN_WINDOW_MS / spanMs);
    setZoom(Math.round(WITNESS_SHARE / share));
    var track = canvas.querySelector('.track');
    var label = canvas.querySelector('.label');
    if (!track || !label) { return; }
    var labelW = label.getBoundingClientRect().width;
    var mid = labelW + ((lo + hi) / 200) * track.getBoundingClientRect().width;
    scroller.scrollLeft = mid - labelW / 2 - scroller.clientWidth / 2;
  }

  function focusEvent(id, group) {
    var el = document.getElementById(id);
    if (!el) { return false; }
    var old = document.querySelectorAll('.focus');
    for (var i = 0; i < old.length; i++) { old[i].classList.remove('focus'); }
    el.classList.add('focus');
    if (group && group.length) {
      zoomTo(group);
      el.scrollIntoView({ block: 'center', inline: 'nearest' });
    } else {
      el.scrollIntoView({ block: 'center', inline: 'center' });
    }
    show(el);
    return true;
  }

  // The elements of the witnesses listed beside `link`.
  function witnessesOf(link) {
    var box = link.closest('.violation');
    var links = box ? box.querySelectorAll('a.witness-link') : [link];
    var out = [];
    for (var i = 0; i < links.length; i++) {
      var el = document.getElementById((links[i].getAttribute('href') || '').slice(1));
      if (el) { out.push(el); }
    }
    return out;
  }

  document.addEventListener('click', function (ev) {
    var t = ev.target;
    if (!(t instanceof Element)) { return; }
    var link = t.closest('a.witness-link');
    if (link) {
      ev.preventDefault();
      focusEvent((link.getAttribute('href') || '').slice(1), witnessesOf(link));
      return;
    }
    var z = t.closest('[data-zoom]');
    if (z) {
      var how = z.getAttribute('data-zoom');
      setZoom(how === 'in' ? zoom * 2 : how === 'out' ? zoom / 2 : 1);
      return;
    }
    if (t.id === 'detail-close') { detail.hidden = true; return; }
    var item = t.closest('.track > [title]');
    if (item) { show(item); }
  });

  if (onlyWitness) {
    onlyWitness.addEventListener('change', function () {
      document.body.classList.toggle('only-witness', onlyWitness.checked);
    });
  }

  if (location.hash.indexOf('#ev-') === 0) { focusEvent(location.hash.slice(1)); }
})();
