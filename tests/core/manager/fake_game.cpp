// SPDX-License-Identifier: Apache-2.0
// fake_game: a stand-in for a game on a real X server — plain Xlib, no Qt, so it behaves like any
// other client. It shows one window (full-screen the way SDL games ask for it, or a plain one),
// prints "shown" once the window is mapped, and runs until SIGTERM.
//
//   fake_game [--fullscreen|--window] [--title T]
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <unistd.h>

namespace {

volatile std::sig_atomic_t g_stop = 0;

void onSignal(int) {
    g_stop = 1;
}

int usage() {
    std::fprintf(stderr, "usage: fake_game [--fullscreen|--window] [--title T]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    bool fullscreen = false;
    const char* title = "fake_game";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--fullscreen") == 0)
            fullscreen = true;
        else if (std::strcmp(argv[i], "--window") == 0)
            fullscreen = false;
        else if (std::strcmp(argv[i], "--title") == 0 && i + 1 < argc)
            title = argv[++i];
        else
            return usage();
    }
    std::signal(SIGTERM, onSignal);
    std::signal(SIGINT, onSignal);

    Display* d = XOpenDisplay(nullptr);
    if (!d) {
        std::fprintf(stderr, "fake_game: cannot open the X display\n");
        return 1;
    }
    const int screen = DefaultScreen(d);
    const Window root = RootWindow(d, screen);
    const unsigned width = fullscreen ? DisplayWidth(d, screen) : 640;
    const unsigned height = fullscreen ? DisplayHeight(d, screen) : 480;
    const Window w =
        XCreateSimpleWindow(d, root, 0, 0, width, height, 0, BlackPixel(d, screen), BlackPixel(d, screen));
    XSelectInput(d, w, StructureNotifyMask);

    XStoreName(d, w, title);
    const Atom utf8 = XInternAtom(d, "UTF8_STRING", False);
    XChangeProperty(d, w, XInternAtom(d, "_NET_WM_NAME", False), utf8, 8, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(title), static_cast<int>(std::strlen(title)));
    XClassHint hint;
    hint.res_name = const_cast<char*>("fake_game");
    hint.res_class = const_cast<char*>("FakeGame");
    XSetClassHint(d, w, &hint);
    const long pid = static_cast<long>(getpid());
    XChangeProperty(d, w, XInternAtom(d, "_NET_WM_PID", False), XA_CARDINAL, 32, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(&pid), 1);
    if (fullscreen) {
        // Before mapping, as EWMH asks of a window that starts full-screen.
        const Atom state = XInternAtom(d, "_NET_WM_STATE_FULLSCREEN", False);
        XChangeProperty(d, w, XInternAtom(d, "_NET_WM_STATE", False), XA_ATOM, 32, PropModeReplace,
                        reinterpret_cast<const unsigned char*>(&state), 1);
    }
    XMapRaised(d, w);

    bool shown = false;
    while (!g_stop) {
        while (XPending(d) > 0) {
            XEvent event;
            XNextEvent(d, &event);
            if (event.type == MapNotify && event.xmap.window == w && !shown) {
                shown = true;
                std::printf("shown\n");
                std::fflush(stdout);
            }
        }
        pollfd fd{ConnectionNumber(d), POLLIN, 0};
        poll(&fd, 1, 100); // wakes for X events, and now and then to notice SIGTERM
    }
    XDestroyWindow(d, w);
    XCloseDisplay(d);
    return 0;
}
