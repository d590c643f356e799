"""Checks a built site (`make site`) as a visitor would meet it: `make check-site`.

Every page names the machine and scale of its figures; every image has alt text that says what it
shows; every link into the site leads to a file that is there (the download buttons included); the
repository buttons lead to REPOSITORY; every notebook page launches on the class's hub (--hub) and on
Binder (--binder) when asked; and two pages, served over HTTP on 127.0.0.1, are photographed by headless
Chromium (if installed) so a person can look, and the pictures are checked not to be blank.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

HREF = re.compile(r'href="([^"]+)"')
LINK = re.compile(r'(?:href|src)="([^"#?]+)[^"]*"')
BANNER = re.compile(r"Figures measured on [^<]+ at IOLAB_SCALE=(quick|full)")
IMAGE = re.compile(r"<img\b[^>]*>")
ALT_TEXT = re.compile(r'\balt="([^"]*)"')
REDIRECT = re.compile(r'http-equiv="Refresh" content="0; url=([^"]+)"')
SKIP = {"search.html", "genindex.html"}  # pages Sphinx writes itself, with no figures
CHROMIUM = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def images_without_alt(page: str) -> list[str]:
    """The ``<img>`` tags of an HTML page whose alt text is missing, empty or only a file's name or path.

    The theme's button icons (a launch button's hub logo) are not figures: the button's text labels them.
    """
    bad = []
    for tag in IMAGE.findall(page):
        if 'src="' in tag and "_static/images/logo_" in tag:
            continue
        alt = (m[1] if (m := ALT_TEXT.search(tag)) else "").strip()
        if len(alt.split()) < 3 or re.search(r"\.(png|svg|jpe?g)$|^[\w./-]+$", alt):
            bad.append(tag[:160])
    return bad


def problems(site: Path, repository: str | None, hub: str | None = None,
             binder: str | None = None) -> tuple[list[str], dict[str, int]]:
    """What is wrong with the site, and counts of what was checked."""
    found, counts = [], {"pages": 0, "links": 0, "downloads": 0, "images": 0, "launches": 0, "binder": 0}
    if not (site / ".nojekyll").is_file():
        found.append(".nojekyll is missing: GitHub Pages would hide the _static and _sources folders")
    for page in sorted(site.rglob("*.html")):
        name = str(page.relative_to(site))
        if name in SKIP or name.startswith("_"):
            continue
        text = page.read_text(errors="replace")
        if (redirect := REDIRECT.search(text)) is not None:  # index.html sends the visitor to the first page
            if not (page.parent / redirect[1]).is_file():
                found.append(f"{name} redirects to {redirect[1]}, which is not there")
            continue
        counts["pages"] += 1
        if not BANNER.search(text):
            found.append(f"{name}: no banner naming the machine and scale of its figures")
        counts["images"] += len(IMAGE.findall(text))
        found += [f"{name}: an image without alt text that says what it shows: {tag}" for tag in images_without_alt(text)]
        for link in LINK.findall(text):
            if urlsplit(link).scheme or link.startswith(("//", "mailto:")):
                continue
            counts["links"] += 1
            counts["downloads"] += "_sources/" in link
            if not (page.parent / unquote(link)).resolve().exists():
                found.append(f"{name}: {link} leads nowhere")
        if repository and f'href="{repository}"' not in text:
            found.append(f"{name}: no repository button leading to {repository}")
        if hub and name.startswith("notebooks/"):
            if f'href="{hub}/hub/user-redirect/' in text:
                counts["launches"] += 1
            else:
                found.append(f"{name}: no launch button to the hub {hub}")
        if binder and name.startswith("notebooks/"):
            if binder_link(text, binder, repository, name):
                counts["binder"] += 1
            else:
                found.append(f"{name}: no Binder button on {binder} opening this notebook in JupyterLab")
    if not counts["downloads"]:
        found.append("no page has a download link")
    return found, counts


def binder_link(page: str, binder: str, repository: str | None, name: str) -> str | None:
    """The page's Binder link that builds the repository and opens the page's notebook in JupyterLab, or None."""
    start = f"{binder}/v2/gh/{repository.removeprefix('https://github.com/')}/" if repository else f"{binder}/v2/"
    notebook = f"?urlpath=lab/tree/{name.removesuffix('.html')}.ipynb"
    return next((link for link in HREF.findall(page) if link.startswith(start) and link.endswith(notebook)), None)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:  # one line per file fetched would bury the report
        pass


def landing(site: Path, page: str) -> str:
    """Where ``page`` leads: its redirect's target (Chromium photographs a redirect as nothing), or itself."""
    redirect = REDIRECT.search((site / page).read_text(errors="replace"))
    return str((site / page).parent.joinpath(redirect[1]).resolve().relative_to(site.resolve())) if redirect else page


@contextlib.contextmanager
def served(site: Path):
    """The site over HTTP on 127.0.0.1 (an ephemeral port), for as long as the block runs."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def screenshot(browser: str, url: str, out: Path) -> str | None:
    """Photograph ``url`` into ``out`` (PNG); a reason if the picture is missing or blank."""
    # No host but 127.0.0.1 resolves: the page must render from the site alone (here a blocked lookup of
    # an outside script hung Chromium for minutes), and the check must not wait on the internet.
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--window-size=1280,900", f"--screenshot={out}", url]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if done.returncode or not out.is_file():
        return f"{url}: {browser} failed: {done.stderr[-500:]}"
    from PIL import Image  # matplotlib's dependency, in the lock

    with Image.open(out) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    if len(colours) < 16:
        return f"{url}: the picture has {len(colours)} colours: a blank page?"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--repository", default=None, help="the https URL the repository buttons must lead to")
    parser.add_argument("--hub", default=None, help="the class's JupyterHub every notebook page must launch on")
    parser.add_argument("--binder", default=None, help="the BinderHub every notebook page must have a Binder button to")
    parser.add_argument("--pages", nargs="*", default=["index.html", "book/04-prefork.html"])
    parser.add_argument("--out", type=Path, default=None, help="folder for the screenshots (default: SITE/../site-check)")
    args = parser.parse_args()
    found, counts = problems(args.site, args.repository or None, (args.hub or "").rstrip("/") or None,
                             (args.binder or "").rstrip("/") or None)
    print(f"{counts['pages']} pages, {counts['links']} links into the site ({counts['downloads']} downloads), "
          f"{counts['images']} images, {counts['launches']} hub and {counts['binder']} Binder launch buttons checked")
    browser = next((b for b in CHROMIUM if shutil.which(b)), None)
    if browser is None:
        print("note: no headless Chromium (apt install chromium-headless-shell): no screenshots taken")
    else:
        out = args.out or args.site.parent / "site-check"
        out.mkdir(parents=True, exist_ok=True)
        with served(args.site) as base:
            for page in map(functools.partial(landing, args.site), args.pages):
                picture = out / (page.replace("/", "-").removesuffix(".html") + ".png")
                if (reason := screenshot(browser, f"{base}/{page}", picture)) is not None:
                    found.append(reason)
                else:
                    print(f"screenshot: {picture}")
    for problem in found:
        print("problem:", problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
