/* The pod sandbox's init for the CRI test (hack/engines/build-pause-image): it holds the pod's
 * namespaces open and does nothing else, as Kubernetes' pause does. It exits on SIGINT or SIGTERM and
 * reaps children it inherits (a pod that shares its pid namespace makes it their init). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction q = {.sa_handler = quit};
    struct sigaction r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    if (sigaction(SIGINT, &q, NULL) || sigaction(SIGTERM, &q, NULL) || sigaction(SIGCHLD, &r, NULL)) {
        return 1;
    }
    for (;;) {
        pause();
    }
}
