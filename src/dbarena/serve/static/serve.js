// dbarena serve: the pages' one script (served from /static: the Content-Security-Policy
// allows no inline script). Two jobs:
// - Home follows the runs running when it was drawn: once a second it asks /live.json
//   (one small query of the store on the server) and rewrites their status, points and
//   the per-second throughput of the point each is measuring (between points, of the
//   one it stored last); a run that ends leaves "Running now", its row in the list
//   saying how and when; a run that starts meanwhile reloads the page, which lists it.
// - Decide's baseline: choosing another shows it at once (the form's GET keeps every
//   choice in the address, so the back button and a copied link work as without script).
'use strict';
(function () {
  const live = document.querySelector('[data-live]');
  if (live) {
    const known = new Set(live.dataset.live ? live.dataset.live.split(',') : []);
    const following = new Set(known);  // less each run that has ended
    const poll = async function () {
      try {
        const answer = await fetch('/live.json?runs=' + encodeURIComponent([...following].join(',')),
                                   {credentials: 'same-origin', cache: 'no-store'});
        if (answer.ok) {
          const data = await answer.json();
          if (data.running.some(function (id) { return !known.has(String(id)); })) {
            window.location.reload();
            return;
          }
          for (const [id, run] of Object.entries(data.runs)) {
            if (run.status !== 'running') ended(id, run);
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
    // A run that has ended (finished, failed, interrupted) leaves "Running now" at once:
    // its row in the list of runs says how and when it ended, and the page stops
    // following it (it keeps looking for a run that starts).
    const ended = function (id, run) {
      following.delete(id);
      for (const row of live.querySelectorAll('tr[data-run="' + id + '"]')) row.remove();
      if (!live.querySelector('tr[data-run]')) {
        const table = live.querySelector('table');
        if (table) {
          const note = document.createElement('p');
          note.className = 'note';
          note.textContent = 'No run is running.';
          table.replaceWith(note);
        }
      }
      for (const row of document.querySelectorAll('#runs tr[data-run="' + id + '"] .ended')) {
        row.textContent = run.ended || '-';
      }
    };
    if (known.size) {
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
