"""`dbarena serve`: a read-only web front end over a store, the second front end beside
the command line (cli/ imports it lazily, only for `dbarena serve`). It needs the
optional extra `dbarena[serve]` (Starlette, uvicorn).

app.py (the Starlette application: routes, the token, the security headers, the store
opened read-only, one connection per worker thread, and every error as one line),
pages.py (the HTML of each page: Home, Decide, a run, a point; Decide is the report's own
HTML, report/html.py's body), live.py (how far a running run is: its planned points from
its stored study, and the JSON a live page polls), static/ (the one script and the style
sheet the pages load; nothing comes from elsewhere).
"""
