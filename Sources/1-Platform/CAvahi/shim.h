// Avahi's client library (Debian: libavahi-client-dev): DNS-SD announcements through the
// system's avahi-daemon, for `fieldcap serve`; browsing for the capture servers it joins.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/address.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
