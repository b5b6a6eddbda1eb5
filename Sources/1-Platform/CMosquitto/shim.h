// libmosquitto (Debian: libmosquitto-dev): Eclipse Mosquitto's MQTT client library, the
// reference broker's own, used through its threaded interface.
#include <mosquitto.h>
