"""Sniffing of files that are not logs: never an error, always a reason."""

from __future__ import annotations

from roofreport.pipeline.sniff import sniff


def test_documents_quoting_log_lines_are_not_logs(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("Run ncu; it prints `==PROF== Connected to process 1` and\n"
                      "  kernel(int), 2023-Oct-29 22:17:35, Context 1, Stream 7\n")
    script = tmp_path / "profile.sh"
    script.write_text("ncu --metrics dram__bytes.sum python main.py  # ==PROF== lines follow\n")
    for path in (readme, script):
        result = sniff(path)
        assert result.family is None and not result.readable
        assert result.skip_reason.startswith("not a profiler log")


def test_empty_binary_and_blank_files_are_skipped_with_reasons(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "blank.txt").write_text("   \n\n")
    reasons = {p.name: sniff(p).skip_reason for p in tmp_path.iterdir()}
    assert reasons == {"empty.log": "empty file", "blob.bin": "binary file, not a profiler log",
                       "blank.txt": "blank file"}


def test_utf16_log_is_sniffed_through_its_encoding(tmp_path):
    text = ("==PROF== Connected to process 7 (/bin/app)\n[7] app@127.0.0.1\n"
            "  k(int), 2023-Oct-29 22:17:35, Context 1, Stream 7\n"
            "    Section: Command line profiler metrics\n")
    path = tmp_path / "ps.txt"
    path.write_bytes("\ufeff".encode("utf-16-le") + text.replace("\n", "\r\n").encode("utf-16-le"))
    result = sniff(path)
    assert result.family == "ncu" and result.encoding == "utf-16-le"
