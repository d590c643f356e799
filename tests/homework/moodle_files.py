"""Files shaped exactly as Moodle writes them, for the Moodle worksheet and intake tests.

Moodle's offline grading worksheet (Download grading worksheet), from moodle/moodle:

- ``mod/assign/gradingtable.php`` (commit 1494620bfbb33538251bc1a222027f665b7da2ea), the constructor when
  downloading: ``Identifier`` (``recordid``), ``Full name``, the site's identity fields (here ``Email
  address``), ``Status``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified
  (submission)`` (no column for a file submission, whose plugin has no editor field), ``Last modified
  (grade)``, then each feedback editor by its title (``Feedback comments``). ``col_recordid`` writes
  ``get_string('hiddenuser') . uniqueid``, "Participant 1001"; ``display_grade`` writes ``format_float``
  with the grade item's two decimals, empty when ungraded; ``col_grademax`` likewise ("3.00");
  ``col_gradecanbechanged`` "Yes" or "No"; ``col_status`` joins its parts with " - " ("Submitted for grading
  - Graded"); ``col_timesubmitted`` and ``col_timemarked`` ``userdate()`` or "-".
- ``mod/assign/lang/en/assign.php`` (commit 0085741f6f10a6c62f66ce4389fb1095d256f807): recordid "Identifier",
  hiddenuser "Participant ", maxgrade "Maximum Grade", gradecanbechanged "Grade can be changed",
  lastmodifiedsubmission, lastmodifiedgrade, submissionstatus_submitted "Submitted for grading",
  submissionstatus_ "No submission", graded "Graded".
- ``userdate()``'s default format is ``strftimedaydatetime``, "%A, %d %B %Y, %I:%M %p" (``lang/en/langconfig.php``,
  commit 001b299eb287b28a2233cdd86dd363419132be2b), with the leading zero of the day and of the hour
  dropped (``calendar/type/gregorian``'s ``timestamp_to_date_string``): "Friday, 7 November 2025, 9:05 AM".
- The CSV is written by OpenSpout (``lib/classes/dataformat/spout_base.php``, commit
  77474b866c7c617be7d2446d9f25e15209b5d4ef; openspout/openspout ``src/Writer/CSV/Writer.php`` and
  ``Options.php``: ``SHOULD_ADD_BOM = true``, then PHP's ``fputcsv`` with ``,`` and ``"`` and no escape
  character), so a UTF-8 byte order mark first, a field enclosed when it holds a space, comma, quote or line
  break, lines ending in ``\\n``. ``\\core\\dataformat::escape_spreadsheet_formula`` leaves a lone "-" as it is.
- The upload (``mod/assign/feedback/offline/importgradeslib.php``, commit
  9762977c028cbd1884ed311a94c49efbae87591b) finds Identifier, Grade and Last modified (grade) by name and
  takes the participant number after "Participant ".

Moodle's submissions download (``mod/assign/locallib.php``, ``download_submissions``): each student's prefix is
``clean_filename(fullname . '_' . get_uniqueid_for_user(userid) . '_')``, the same participant number as the
worksheet's; with "Download submissions in folders" (the default) each plugin's files go in a folder
``<prefix>assignsubmission_file_``; without it (and in Moodle before that option, whose ``download_submissions``
was read in a stored version without a commit) each file is named ``<prefix>assignsubmission_file_<file name>``.
With anonymous submissions the prefix is ``Participant_<participant number>_``.
"""

from __future__ import annotations

BOM = "\ufeff"
HEADER = ('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade","Grade can be changed",'
          '"Last modified (submission)","Last modified (grade)","Feedback comments"')
ROWS = [
    '"Participant 1001","Ada Lovelace",ada@example.edu,"Submitted for grading",,3.00,Yes,'
    '"Friday, 7 November 2025, 9:05 AM",-,',
    '"Participant 1002","Grace Hopper",grace@example.edu,"No submission",,3.00,Yes,-,-,',
    '"Participant 1003","Alan Turing",alan@example.edu,"Submitted for grading - Graded",2.00,3.00,No,'
    '"Thursday, 6 November 2025, 11:40 PM","Saturday, 8 November 2025, 10:12 AM","Seen in class, well done"',
]
WORKSHEET = BOM + "\n".join([HEADER, *ROWS]) + "\n"

# The course's roster for that assignment: the key is the participant number.
ROSTER = "id,key,name\nada,1001,Ada Lovelace\ngrace,1002,Grace Hopper\nalan,1003,Alan Turing\n"
# Its submissions download: Ada's in folders, Grace's without (renamed by her), Alan's anonymous.
DOWNLOAD = {
    "Ada Lovelace_1001_assignsubmission_file_/hw.ipynb": "ada's",
    "Grace Hopper_1002_assignsubmission_file_my_hw.ipynb": "grace's, renamed",
    "Participant_1003_assignsubmission_file_/hw.ipynb": "alan's, anonymous",
}
