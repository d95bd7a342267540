"""Errors a user can cause. The CLI turns each into one line on stderr and exit status 2."""


class UserError(Exception):
    """Something the user can fix: a bad file, an unknown metric, a missing model."""


class DataError(UserError):
    """A dataset that cannot be read, with the place it went wrong."""

    def __init__(self, path, message: str, line: int | None = None, field: str | None = None):
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.field = path, line, field
