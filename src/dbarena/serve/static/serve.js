// dbarena serve: the pages' one script (served from /static: the Content-Security-Policy
// allows no inline script). Two jobs:
// - Home follows the runs running when it was drawn: once a second it asks /live.json
//   (one small query of the store on the server) and rewrites their status, points and
//   the per-second throughput of the point each is measuring (between points, of the
//   one it stored last); a run that starts meanwhile reloads the page, which lists it.
// - Decide's baseline: choosing another shows it at once (the form's GET keeps every
//   choice in the address, so the back button and a copied link work as without script).
'use strict';
(function () {
  const live = document.querySelector('[data-live]');
  if (live) {
    const watched = live.dataset.live;
    const known = new Set(watched ? watched.split(',') : []);
    const poll = async function () {
      try {
        const answer = await fetch('/live.json?runs=' + encodeURIComponent(watched),
                                   {credentials: 'same-origin', cache: 'no-store'});
        if (answer.ok) {
          const data = await answer.json();
          if (data.running.some(function (id) { return !known.has(String(id)); })) {
            window.location.reload();
            return;
          }
          for (const [id, run] of Object.entries(data.runs)) {
            for (const row of document.querySelectorAll('tr[data-run="' + id + '"]')) {
              row.querySelector('.points').textContent = run.text;
              row.querySelector('.status').textContent = run.status;
              const current = row.querySelector('.current');
              if (current && run.status === 'running') {
                current.textContent = run.current_text;
              }
            }
          }
        }
      } catch (e) {
        // The server restarting or the network away for a moment: the next poll tries again.
      }
      window.setTimeout(poll, 1000);
    };
    if (watched) {
      window.setTimeout(poll, 1000);
    } else {
      // Nothing running: still look once every few seconds for a run that starts.
      window.setTimeout(poll, 3000);
    }
  }
  for (const select of document.querySelectorAll('form.choose select')) {
    select.addEventListener('change', function () { select.form.submit(); });
  }
})();
