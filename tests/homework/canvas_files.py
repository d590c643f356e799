"""Files shaped exactly as Canvas writes them, for the intake and gradebook tests.

Canvas's gradebook export (``lib/gradebook_exporter.rb`` in instructure/canvas-lms, read at commit
433333eeaf1583554561e207eafd591da516fc8e): a first row ``Student, ID``, ``SIS User ID`` (when the
export includes SIS ids), ``SIS Login ID``, ``Section``, then each assignment's ``title_with_id``,
``Name (assignment id)``, then the read-only totals (``Current Points``, ``Final Points``, ``Current
Score``, ...); a second row ``"    Points Possible"`` (four leading spaces), empty under the five
identity columns, each assignment's points, then ``(read only)``; then a row per student, whose
``Student`` is the sortable name ("Lovelace, Ada") and ``ID`` the Canvas user id. The nemogb-r
vignette "Detailed Canvas Export Info" (nemogb-dev.github.io/nemogb-r/articles/
detailed-canvas-export-info.html) describes the same columns in an export of 2023: ``ID`` "the
student's Canvas ID", assignment columns of the form "Quiz 1 (87568490)".

Canvas's submissions download (``lib/content_zipper.rb`` in instructure/canvas-lms, commit
a72b23a821682f03c70b28eaeae616d4001fca1c, ``get_filename`` and ``add_upload_submission``): each file
is ``[sortable name downcased, "LATE" when late, user id]`` joined by ``_`` with non-word characters
removed, then ``_<attachment id>_<display name>``; for an assignment graded anonymously that commit
writes no name (``[LATE_]<user id>_...``). Later Canvas writes ``anon_<anonymous id>`` in place of name
and user id, with ``LATE_`` before it; that shape is the one the instructor's review recorded from
current canvas-lms (../shared/reviews/instructor-workflow-2026-11.md, section 2 and finding 4), and the
one current Canvas reads back when feedback is re-uploaded (``app/models/abstract_assignment.rb``,
``infer_comment_context_from_filename``, commit 028f76bb2b8c2a7769c717674304c54283fb5de2: a name whose
first part, ``LATE`` aside, is ``anon`` is ``anon_<anonymous id>_<attachment id>``). Both shapes are tested.
"""

from __future__ import annotations

ASSIGNMENT = "HW2 Blocking (4321)"  # title_with_id
GROUP = ["Current Points", "Final Points", "Current Score", "Unposted Current Score", "Final Score",
         "Unposted Final Score"]  # per assignment group ("Assignments"), then for the course
EXPORT_HEADER = ",".join(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT, "Quiz 1 (87568490)",
                          *(f"Assignments {c}" for c in GROUP), *GROUP])
POINTS_ROW = ",".join(["    Points Possible", "", "", "", "", "13", "10", *["(read only)"] * 12])
STUDENT_ROWS = [
    '"Lovelace, Ada",1001,S0001,alovelace,Section A,,8,8,8,61.54,61.54,34.78,34.78,8,8,61.54,61.54,34.78,34.78',
    '"Doe, Cyd",1003,S0003,cdoe,Section A,,7,7,7,53.85,53.85,30.43,30.43,7,7,53.85,53.85,30.43,30.43',
    '"Garcia, Ana",1009,S0009,agarcia,Section B,,,0,0,,,0,0,0,0,,,0,0',
]
EXPORT = "\n".join([EXPORT_HEADER, POINTS_ROW, *STUDENT_ROWS]) + "\n"

# The download of HW2 for that class: Ada on time, Cyd late, Ana's notebook renamed by her.
DOWNLOAD = {
    "lovelaceada_1001_5550001_02-blocking.ipynb": "ada's",
    "doecyd_LATE_1003_5550003_02-blocking.ipynb": "cyd's",
    "garciaana_1009_5550009_hw2 final.ipynb": "ana's, renamed",
}
# The same assignment graded anonymously: current Canvas, then the commit above (no name).
ANONYMOUS = {
    "anon_k3x9p_5550006_02-blocking.ipynb": "k3x9p's",
    "LATE_anon_q7w2e_5550007_02-blocking.ipynb": "q7w2e's, late",
    "LATE_1004_5550004_02-blocking.ipynb": "1004's, late, older Canvas",
}
