/* pause: the pod sandbox's init process, for the locally built registry.k8s.io/pause image.
 * Sleeps until SIGINT/SIGTERM, reaping any child it inherits.  Built static by build-node-image.sh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

static void on_chld(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("pause (tau-demo local build)\n");
    return 0;
  }
  if (getpid() != 1) fprintf(stderr, "Warning: pause should be the first process\n");
  struct sigaction term = {.sa_handler = on_term};
  struct sigaction chld = {.sa_handler = on_chld, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
      sigaction(SIGCHLD, &chld, NULL) < 0)
    return 1;
  for (;;) pause();
}
