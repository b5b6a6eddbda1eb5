// libarchive (Debian: libarchive-dev): the tar streams `fieldcap serve` sends.
#include <archive.h>
#include <archive_entry.h>
