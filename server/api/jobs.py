"""TMX import as a background job (upload, poll progress, result) and streamed TMX export."""

from __future__ import annotations

import os
import shutil
from typing import IO, Any, cast
from urllib.parse import quote

from flask import Blueprint, Response, jsonify, request, stream_with_context, url_for

from tm_guide.errors import Forbidden, InvalidInput
from tm_guide.server.api.common import services
from tm_guide.server.auth import current_principal, require
from tm_guide.server.document import query_arguments
from tm_guide.server.jobs import CountingReader, JobProgress
from tm_guide.server.services import Services

blueprint = Blueprint("jobs", __name__, url_prefix="/v1")

CHUNK = 1024 * 1024


@blueprint.post("/memories/<name>/imports")
def start_import(name: str) -> tuple[Response, int]:
    """The request body is the TMX or XLIFF file itself (or a multipart form field `file`)."""
    principal = require(name, "write")
    svc = services()
    fmt = query_arguments()["format"]
    memory = svc.store().get_memory(name)
    request.max_content_length = svc.config.limits.max_import_bytes
    job_id = svc.jobs.new_job("import", memory.name, principal.name, fmt)
    upload = svc.jobs.upload_path(job_id)
    try:
        size = _save_upload(upload)
    except BaseException as exc:  # 413, a client gone, a full disk: no job waits on this upload
        upload.unlink(missing_ok=True)
        message = getattr(exc, "description", None) or str(exc) or type(exc).__name__
        svc.jobs.refuse(job_id, {"error": "upload_failed", "message": message})
        raise
    if size == 0:
        upload.unlink(missing_ok=True)
        svc.jobs.refuse(job_id, {"error": "invalid_input", "message": "the uploaded file is empty"})
        raise InvalidInput("the uploaded file is empty", field="body")
    return _queued(svc, job_id, memory.name, fmt)


@blueprint.post("/jobs/<job_id>/retry")
def retry_job(job_id: str) -> tuple[Response, int]:
    """An import interrupted before it stored anything runs again on the same upload."""
    svc = services()
    require(svc.jobs.read(job_id)["memory"], "write")
    state = svc.jobs.retry(job_id)
    return _queued(svc, job_id, state["memory"], state.get("format", "tmx"))


def _queued(svc: Services, job_id: str, memory_name: str, fmt: str) -> tuple[Response, int]:
    upload = svc.jobs.upload_path(job_id)
    size = os.path.getsize(upload)
    svc.jobs.submit(
        job_id, lambda progress: _import_file(svc, memory_name, upload, size, progress, fmt)
    )
    location = url_for("jobs.show_job", job_id=job_id)
    response = jsonify({"job": svc.jobs.read(job_id), "status_url": location})
    response.headers["Location"] = location
    return response, 202


def _save_upload(path: os.PathLike[str]) -> int:
    """Streams the body to disk so that a large TMX never sits in memory."""
    if request.mimetype == "multipart/form-data":
        upload = request.files.get("file")
        if upload is None:
            raise InvalidInput("multipart upload needs a 'file' field", field="file")
        upload.save(path)
    else:
        with open(path, "wb") as out:
            shutil.copyfileobj(request.stream, out, CHUNK)
    return os.path.getsize(path)


def _import_file(
    svc: Services, memory_name: str, upload: Any, size: int, progress: JobProgress, fmt: str
) -> dict[str, Any]:
    from tm_guide.formats import read_tmx, read_xliff

    read = {"tmx": read_tmx, "xliff": read_xliff}[fmt]
    store = svc.store()
    memory = store.get_memory(memory_name)
    with open(upload, "rb") as raw:
        reader_file = CountingReader(raw, f"upload.{fmt}")
        # the readers only call read(), which CountingReader provides.
        reader = read(cast(IO[bytes], reader_file), memory.source_lang, memory.target_lang)
        report = store.import_records(
            memory,
            progress.records(reader, reader_file, size),
            on_commit=lambda: progress.phase("indexing"),
        )
    svc.metrics.segments_added.labels(kind="import").inc(report.added + report.updated)
    progress.phase("aligning")
    return {
        "added": report.added,
        "merged": report.merged,
        "updated": report.updated,
        "skipped": report.skipped + reader.stats.skipped_total,
        "skipped_reasons": dict(reader.stats.skipped),
        "warnings": list(reader.stats.warnings),
        "records_read": reader.stats.records,
        **_align_imported(svc, memory_name, progress),  # cut short by a crash: resumed
    }


def _align_imported(svc: Services, memory_name: str, progress: JobProgress) -> dict[str, Any]:
    """Align what an import stored; the part of its result that says so."""
    from tm_guide.server.translation import analyse_memory

    aligned = analyse_memory(svc, svc.store().get_memory(memory_name), progress.stage)
    memory = svc.store().get_memory(memory_name)
    return {"aligned": aligned, "revision": memory.revision, "segment_count": memory.segment_count}


def align_in_background(
    svc: Services, memory_name: str, owner: str, size: int, source: str
) -> dict[str, Any]:
    """Align what a protocol upload (ModernMT TMX or CSV, DeepL glossary) just committed, as an
    import job: the request waits `upload_wait_s` for it, then answers with the job's state
    either way. A crash meanwhile leaves the job to be resumed, as for /v1 imports."""
    job_id = svc.jobs.new_job(
        "import", memory_name, owner, source, phase="aligning", committed="all", size=size
    )

    def align(progress: JobProgress) -> dict[str, Any]:
        return {"records_read": size, **_align_imported(svc, memory_name, progress)}

    svc.jobs.submit(job_id, align)
    return svc.jobs.wait(job_id, svc.config.limits.upload_wait_s)


def resume_alignments(svc: Services) -> list[str]:
    """Take up the imports whose process died while aligning what they had stored: each is
    claimed by one process, aligned again, and ends as succeeded. Run when a worker starts."""
    resumed = []
    for job_id in svc.jobs.alignments_to_resume():
        if not svc.jobs.claim(job_id):
            continue
        name = svc.jobs.read(job_id)["memory"]

        def align(progress: JobProgress, name: str = name) -> dict[str, Any]:
            return {**_align_imported(svc, name, progress), "resumed": True}

        svc.jobs.submit(job_id, align)
        resumed.append(job_id)
    return resumed


@blueprint.get("/jobs/<job_id>")
def show_job(job_id: str) -> Response:
    """Anyone who may read the job's memory may poll it."""
    principal = current_principal()
    state = services().jobs.read(job_id)
    if not principal.allows(state["memory"], "read"):
        raise Forbidden(
            f"API key '{principal.name}' has no read access to memory '{state['memory']}'"
        )
    return jsonify(state)


@blueprint.get("/memories/<name>/export")
def export(name: str) -> Response:
    """TMX of the whole memory, streamed segment by segment."""
    require(name, "read")
    from tm_guide.server.export import tmx_chunks

    store = services().store()
    memory = store.get_memory(name)
    response = Response(
        stream_with_context(tmx_chunks(store, memory)), mimetype="application/x-tmx+xml"
    )
    response.headers["Content-Disposition"] = attachment(f"{memory.name}.tmx")
    return response


def attachment(filename: str) -> str:
    """A Content-Disposition for any memory name (names made through ModernMT or DeepL may hold
    any character): an ASCII fallback and the UTF-8 name (RFC 6266)."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
