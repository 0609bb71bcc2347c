<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="de_DE">
<context>
    <name>NodeStatusText</name>
    <message>
        <source>1 second</source>
        <translation>1 Sekunde</translation>
    </message>
    <message>
        <source>%1 seconds</source>
        <translation>%1 Sekunden</translation>
    </message>
    <message>
        <source>1 minute</source>
        <translation>1 Minute</translation>
    </message>
    <message>
        <source>%1 minutes</source>
        <translation>%1 Minuten</translation>
    </message>
    <message>
        <source>%1 hours</source>
        <translation>%1 Stunden</translation>
    </message>
    <message>
        <source>%1 MB</source>
        <translation>%1 MB</translation>
    </message>
    <message>
        <source>Your CPU</source>
        <translation>Ihre CPU</translation>
    </message>
    <message>
        <source>Your graphics card</source>
        <translation>Ihre Grafikkarte</translation>
    </message>
    <message>
        <source>Your CPU (%1)</source>
        <translation>Ihre CPU (%1)</translation>
    </message>
    <message>
        <source>Your %1</source>
        <translation>Ihre %1</translation>
    </message>
    <message>
        <source>%1: about %2 TFLOP/s in %3</source>
        <translation>%1: etwa %2 TFLOP/s in %3</translation>
    </message>
    <message>
        <source>No NVIDIA GPU found — contributing with the CPU</source>
        <translation>Keine NVIDIA-GPU gefunden – Sie tragen mit der CPU bei</translation>
    </message>
    <message>
        <source>You hold stage %1 of the model</source>
        <translation>Ihr Computer übernimmt Stufe %1 des Modells</translation>
    </message>
    <message>
        <source>You hold stage %1 of %2 of the model</source>
        <translation>Ihr Computer übernimmt Stufe %1 von %2 des Modells</translation>
    </message>
    <message>
        <source>The swarm is full right now. Tessera will try again by itself — you can close this window.</source>
        <translation>Der Schwarm ist gerade voll. Tessera versucht es von selbst erneut – Sie können dieses Fenster schließen.</translation>
    </message>
    <message>
        <source>The swarm is full right now. Tessera will try again in %1 — you can close this window.</source>
        <translation>Der Schwarm ist gerade voll. Tessera versucht es in %1 erneut – Sie können dieses Fenster schließen.</translation>
    </message>
    <message>
        <source>Asking for the model&apos;s part…</source>
        <translation>Teil des Modells wird angefragt…</translation>
    </message>
    <message>
        <source>%1 of %2</source>
        <translation>%1 von %2</translation>
    </message>
    <message>
        <source>%1/s</source>
        <translation>%1/s</translation>
    </message>
    <message>
        <source>about %1 left</source>
        <translation>noch etwa %1</translation>
    </message>
    <message>
        <source>The coordinator at this address is not the one Tessera joined before: its identity key changed. Check the address in Settings. If its operator announced a new key, remove coordinator.json from Tessera&apos;s data folder and try again.</source>
        <translation>Der Koordinator unter dieser Adresse ist nicht derselbe, mit dem sich Tessera zuvor verbunden hat: Sein Identitätsschlüssel hat sich geändert. Prüfen Sie die Adresse in den Einstellungen. Falls sein Betreiber einen neuen Schlüssel angekündigt hat, entfernen Sie coordinator.json aus dem Datenordner von Tessera und versuchen Sie es erneut.</translation>
    </message>
    <message>
        <source>This computer does not have enough memory for any part of the model. There is nothing to fix on your side; a smaller model may fit later.</source>
        <translation>Dieser Computer hat für keinen Teil des Modells genug Speicher. Auf Ihrer Seite gibt es nichts zu beheben; ein kleineres Modell passt vielleicht später.</translation>
    </message>
    <message>
        <source>This version of Tessera is too old for the swarm. Install the latest version and try again.</source>
        <translation>Diese Version von Tessera ist zu alt für den Schwarm. Installieren Sie die neueste Version und versuchen Sie es erneut.</translation>
    </message>
    <message>
        <source>The coordinator found results from this computer that were not the model&apos;s work (a failed check of its results) and no longer accepts it for a while. If you did not modify Tessera, check that your graphics card is stable (no overclock) and contact the coordinator&apos;s operator.</source>
        <translation>Der Koordinator hat Ergebnisse dieses Computers gefunden, die nicht aus der Arbeit am Modell stammen (eine Prüfung seiner Ergebnisse ist fehlgeschlagen), und nimmt ihn eine Zeit lang nicht mehr an. Falls Sie Tessera nicht verändert haben, prüfen Sie, ob Ihre Grafikkarte stabil läuft (keine Übertaktung), und wenden Sie sich an den Betreiber des Koordinators.</translation>
    </message>
    <message>
        <source>Check the coordinator&apos;s address in Settings, then try again.</source>
        <translation>Prüfen Sie die Adresse des Koordinators in den Einstellungen und versuchen Sie es dann erneut.</translation>
    </message>
    <message>
        <source>The coordinator is still preparing the model (%1% ready). Tessera will try again by itself — you can close this window.</source>
        <translation>Der Koordinator bereitet das Modell noch vor (%1 % fertig). Tessera versucht es von selbst erneut – Sie können dieses Fenster schließen.</translation>
    </message>
    <message>
        <source>The coordinator is still preparing the model (%1% ready). Tessera will try again in %2 — you can close this window.</source>
        <translation>Der Koordinator bereitet das Modell noch vor (%1 % fertig). Tessera versucht es in %2 erneut – Sie können dieses Fenster schließen.</translation>
    </message>
</context>
<context>
    <name>PauseReason</name>
    <message>
        <source>on battery</source>
        <translation>im Akkubetrieb</translation>
    </message>
    <message>
        <source>a game is running: %1</source>
        <translation>ein Spiel läuft: %1</translation>
    </message>
    <message>
        <source>a full-screen app is in front: %1</source>
        <translation>eine Vollbild-App ist im Vordergrund: %1</translation>
    </message>
    <message>
        <source>an unnamed app</source>
        <translation>eine unbenannte App</translation>
    </message>
    <message>
        <source>a game is using the GPU: %1</source>
        <translation>ein Spiel nutzt die GPU: %1</translation>
    </message>
    <message>
        <source>the GPU is at %1 °C (limit %2 °C)</source>
        <translation>die GPU hat %1 °C (Grenze %2 °C)</translation>
    </message>
    <message>
        <source>outside your contributing hours (%1)</source>
        <translation>außerhalb Ihrer Beitragszeiten (%1)</translation>
    </message>
    <message>
        <source>you are using the computer — contributing only when idle</source>
        <translation>Sie nutzen den Computer – Tessera trägt nur im Leerlauf bei</translation>
    </message>
    <message>
        <source>you paused it until you resume</source>
        <translation>von Ihnen angehalten, bis Sie fortsetzen</translation>
    </message>
    <message>
        <source>you paused it until %1</source>
        <translation>von Ihnen angehalten bis %1 Uhr</translation>
    </message>
    <message>
        <source>your pause is over, but a game is still running</source>
        <translation>Ihre Pause ist vorbei, aber ein Spiel läuft noch</translation>
    </message>
    <message>
        <source>resuming in %1 s</source>
        <translation>weiter in %1 s</translation>
    </message>
</context>
<context>
    <name>tessera::manager::CoordinatorCheck</name>
    <message>
        <source>“%1” is not a coordinator address. An address looks like https://coordinator.example.org:7443</source>
        <translation>„%1“ ist keine Koordinator-Adresse. Eine Adresse sieht so aus: https://coordinator.example.org:7443</translation>
    </message>
    <message>
        <source>The certificate file set for the coordinator cannot be read. Choose it again in Settings, or clear it.</source>
        <translation>Die für den Koordinator festgelegte Zertifikatsdatei kann nicht gelesen werden. Wählen Sie sie in den Einstellungen erneut aus oder entfernen Sie sie.</translation>
    </message>
    <message>
        <source>The coordinator at %1 uses a certificate that no authority this computer trusts has signed. If your swarm&apos;s operator gave you its fingerprint and it matches the one below, you can trust this coordinator.</source>
        <translation>Der Koordinator unter %1 verwendet ein Zertifikat, das von keiner Stelle signiert wurde, der dieser Computer vertraut. Wenn Ihnen der Betreiber Ihres Schwarms den Fingerabdruck genannt hat und er mit dem unten angezeigten übereinstimmt, können Sie diesem Koordinator vertrauen.</translation>
    </message>
    <message>
        <source>The coordinator&apos;s certificate is not made out for %1. Use the address your swarm&apos;s operator gave you (the name in the certificate: %2).</source>
        <translation>Das Zertifikat des Koordinators ist nicht auf %1 ausgestellt. Verwenden Sie die Adresse, die Ihnen der Betreiber Ihres Schwarms genannt hat (der Name im Zertifikat: %2).</translation>
    </message>
    <message>
        <source>The secure connection to the coordinator at %1 failed. Check the computer&apos;s date and time, then try again.</source>
        <translation>Die sichere Verbindung zum Koordinator unter %1 ist fehlgeschlagen. Prüfen Sie Datum und Uhrzeit des Computers und versuchen Sie es dann erneut.</translation>
    </message>
    <message>
        <source>There is no computer named %1. Check the address for typing mistakes.</source>
        <translation>Es gibt keinen Computer namens %1. Prüfen Sie die Adresse auf Tippfehler.</translation>
    </message>
    <message>
        <source>The coordinator at %1 did not answer within %2 seconds. Check the address and this computer&apos;s internet connection, then try again.</source>
        <translation>Der Koordinator unter %1 hat nicht innerhalb von %2 Sekunden geantwortet. Prüfen Sie die Adresse und die Internetverbindung dieses Computers und versuchen Sie es dann erneut.</translation>
    </message>
    <message>
        <source>Nothing answers at %1: the coordinator is not running there, or the address or port is wrong. Check the address, then try again.</source>
        <translation>Unter %1 antwortet nichts: Der Koordinator läuft dort nicht, oder die Adresse oder der Port ist falsch. Prüfen Sie die Adresse und versuchen Sie es dann erneut.</translation>
    </message>
    <message>
        <source>The coordinator at %1 cannot be reached. Check the address and this computer&apos;s internet connection, then try again.</source>
        <translation>Der Koordinator unter %1 ist nicht erreichbar. Prüfen Sie die Adresse und die Internetverbindung dieses Computers und versuchen Sie es dann erneut.</translation>
    </message>
    <message>
        <source>Something answers at %1, but it is not a Tessera coordinator. Check the address your swarm&apos;s operator gave you.</source>
        <translation>Unter %1 antwortet etwas, aber es ist kein Tessera-Koordinator. Prüfen Sie die Adresse, die Ihnen der Betreiber Ihres Schwarms genannt hat.</translation>
    </message>
    <message>
        <source>HTTP status %1 for /v1/info</source>
        <translation>HTTP-Status %1 für /v1/info</translation>
    </message>
    <message>
        <source>The coordinator at %1 answers.</source>
        <translation>Der Koordinator unter %1 antwortet.</translation>
    </message>
    <message>
        <source>The coordinator at %1 presents a different certificate from the one this computer trusts for it. Trust the new one only if your swarm&apos;s operator told you it changed and its fingerprint matches the one below; otherwise someone may be impersonating the coordinator.</source>
        <translation>Der Koordinator unter %1 legt ein anderes Zertifikat vor als das, dem dieser Computer für ihn vertraut. Vertrauen Sie dem neuen nur, wenn der Betreiber Ihres Schwarms Ihnen mitgeteilt hat, dass es sich geändert hat, und sein Fingerabdruck mit dem unten angezeigten übereinstimmt; andernfalls gibt sich womöglich jemand als der Koordinator aus.</translation>
    </message>
</context>
<context>
    <name>tessera::manager::Manager</name>
    <message>
        <source>Tessera&apos;s node stopped</source>
        <translation>Der Tessera-Knoten wurde beendet</translation>
    </message>
    <message>
        <source>Tessera paused</source>
        <translation>Tessera pausiert</translation>
    </message>
    <message>
        <source>Tessera resumed</source>
        <translation>Tessera läuft wieder</translation>
    </message>
    <message>
        <source>Contributing again.</source>
        <translation>Sie tragen wieder bei.</translation>
    </message>
    <message>
        <source>Start at login</source>
        <translation>Start bei der Anmeldung</translation>
    </message>
    <message>
        <source>stage %1 of %2</source>
        <translation>Stufe %1 von %2</translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation>Stufe %1</translation>
    </message>
    <message>
        <source>Not contributing — click Contribute to lend your GPU</source>
        <translation>Kein Beitrag – klicken Sie auf „Mitmachen“, um Ihre GPU zu verleihen</translation>
    </message>
    <message>
        <source>Stopped — this stage of the model needs %1 on disk; your limit is %2 (Settings → Data folder)</source>
        <translation>Angehalten – diese Stufe des Modells braucht %1 Speicherplatz; Ihre Grenze liegt bei %2 (Einstellungen → Datenordner)</translation>
    </message>
    <message>
        <source>Paused — %1</source>
        <translation>Pausiert – %1</translation>
    </message>
    <message>
        <source>Stopped — %1</source>
        <translation>Angehalten – %1</translation>
    </message>
    <message>
        <source>Waiting — %1; starting it again</source>
        <translation>Wartet – %1; wird neu gestartet</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>Wird gestartet…</translation>
    </message>
    <message>
        <source>Measuring your GPU…</source>
        <translation>Ihre GPU wird gemessen…</translation>
    </message>
    <message>
        <source>Asking the coordinator for a place in the swarm…</source>
        <translation>Der Koordinator wird um einen Platz im Schwarm gebeten…</translation>
    </message>
    <message>
        <source>Waiting — the swarm has no room right now; trying again in %1</source>
        <translation>Wartet – im Schwarm ist gerade kein Platz frei; neuer Versuch in %1</translation>
    </message>
    <message>
        <source>Downloading %1 of the model: %2</source>
        <translation>%1 des Modells wird heruntergeladen: %2</translation>
    </message>
    <message>
        <source>Joining the swarm with %1 of the model…</source>
        <translation>Beitritt zum Schwarm mit %1 des Modells…</translation>
    </message>
    <message>
        <source>Lost contact with the coordinator — reconnecting</source>
        <translation>Verbindung zum Koordinator verloren – wird wiederhergestellt</translation>
    </message>
    <message>
        <source>Contributing to %1 of the model</source>
        <translation>Sie tragen zu %1 des Modells bei</translation>
    </message>
    <message>
        <source>Waiting for other volunteers (stage %1 has nobody yet)</source>
        <translation>Wartet auf weitere Freiwillige (Stufe %1 ist noch unbesetzt)</translation>
    </message>
    <message>
        <source>Waiting for work from the coordinator</source>
        <translation>Wartet auf Arbeit vom Koordinator</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>Pausiert</translation>
    </message>
    <message>
        <source>Waiting — the node is stopping</source>
        <translation>Wartet – der Knoten wird beendet</translation>
    </message>
    <message>
        <source>Waiting — the coordinator could not be reached or did not let this computer join; trying again in %1</source>
        <translation>Wartet – der Koordinator war nicht erreichbar oder hat diesen Computer nicht aufgenommen; neuer Versuch in %1</translation>
    </message>
    <message>
        <source>Waiting — the coordinator is preparing the model (%1% ready); trying again in %2</source>
        <translation>Wartet – der Koordinator bereitet das Modell vor (%1 % fertig); neuer Versuch in %2</translation>
    </message>
</context>
<context>
    <name>tessera::manager::NodeSupervisor</name>
    <message>
        <source>cannot start %1: %2</source>
        <translation>%1 kann nicht gestartet werden: %2</translation>
    </message>
    <message>
        <source>the node was killed — the computer may have run out of memory, or another program ended it</source>
        <translation>der Knoten wurde abgebrochen – vielleicht hatte der Computer nicht mehr genug Speicher, oder ein anderes Programm hat ihn beendet</translation>
    </message>
    <message>
        <source>the node crashed on a memory fault (a bug in Tessera; signal %1)</source>
        <translation>der Knoten ist wegen eines Speicherzugriffsfehlers abgestürzt (ein Fehler in Tessera; Signal %1)</translation>
    </message>
    <message>
        <source>the node crashed on an internal error (a bug in Tessera; signal %1)</source>
        <translation>der Knoten ist wegen eines internen Fehlers abgestürzt (ein Fehler in Tessera; Signal %1)</translation>
    </message>
    <message>
        <source>the node crashed: this processor lacks an instruction it used (signal %1)</source>
        <translation>der Knoten ist abgestürzt: Diesem Prozessor fehlt ein Befehl, den der Knoten verwendet hat (Signal %1)</translation>
    </message>
    <message>
        <source>the node crashed on an arithmetic fault (a bug in Tessera; signal %1)</source>
        <translation>der Knoten ist wegen eines Rechenfehlers abgestürzt (ein Fehler in Tessera; Signal %1)</translation>
    </message>
    <message>
        <source>the node crashed (signal %1)</source>
        <translation>der Knoten ist abgestürzt (Signal %1)</translation>
    </message>
    <message>
        <source>the node stopped with exit code %1</source>
        <translation>der Knoten wurde mit Exit-Code %1 beendet</translation>
    </message>
    <message>
        <source>%1; restarting in %2 s</source>
        <translation>%1; Neustart in %2 s</translation>
    </message>
</context>
<context>
    <name>tessera::ui::AboutBox</name>
    <message>
        <source>About Tessera</source>
        <translation>Über Tessera</translation>
    </message>
    <message>
        <source>&lt;b&gt;Tessera %1&lt;/b&gt;&lt;p&gt;Lend your GPU to the training of a large language model.&lt;/p&gt;</source>
        <translation>&lt;b&gt;Tessera %1&lt;/b&gt;&lt;p&gt;Leihen Sie Ihre GPU für das Training eines großen Sprachmodells.&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p&gt;Copyright 2026 The Tessera contributors.&lt;/p&gt;&lt;p&gt;Tessera is free software, licensed under the &lt;a href=&quot;https://www.apache.org/licenses/LICENSE-2.0&quot;&gt;Apache License, Version 2.0&lt;/a&gt;. It comes with no warranty.&lt;/p&gt;&lt;p&gt;It uses Qt %1 (LGPLv3) and LibTorch (BSD), each under its own licence.&lt;/p&gt;</source>
        <translation>&lt;p&gt;Copyright 2026 Die Tessera-Mitwirkenden.&lt;/p&gt;&lt;p&gt;Tessera ist freie Software, lizenziert unter der &lt;a href=&quot;https://www.apache.org/licenses/LICENSE-2.0&quot;&gt;Apache License, Version 2.0&lt;/a&gt;. Es wird keinerlei Gewährleistung übernommen.&lt;/p&gt;&lt;p&gt;Tessera verwendet Qt %1 (LGPLv3) und LibTorch (BSD), jeweils unter ihrer eigenen Lizenz.&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ConnectionSettingsPage</name>
    <message>
        <source>None: the system&apos;s trusted authorities</source>
        <translation>Keines: die vertrauenswürdigen Stellen des Systems</translation>
    </message>
    <message>
        <source>Change these only if the swarm&apos;s operator asked you to. Tessera starts its node again with the new address; what you earned stays yours.</source>
        <translation>Ändern Sie diese Angaben nur, wenn der Betreiber des Schwarms Sie darum gebeten hat. Tessera startet seinen Knoten mit der neuen Adresse neu; was Sie verdient haben, bleibt Ihnen.</translation>
    </message>
    <message>
        <source>Coordinator address:</source>
        <translation>Koordinator-Adresse:</translation>
    </message>
    <message>
        <source>Certificate (PEM):</source>
        <translation>Zertifikat (PEM):</translation>
    </message>
    <message>
        <source>Enter the coordinator&apos;s address.</source>
        <translation>Geben Sie die Adresse des Koordinators ein.</translation>
    </message>
    <message>
        <source>An address looks like https://coordinator.example.org:7443</source>
        <translation>Eine Adresse sieht so aus: https://coordinator.example.org:7443</translation>
    </message>
    <message>
        <source>There is no readable file at this path.</source>
        <translation>Unter diesem Pfad gibt es keine lesbare Datei.</translation>
    </message>
    <message>
        <source>The coordinator&apos;s certificate</source>
        <translation>Zertifikat des Koordinators</translation>
    </message>
    <message>
        <source>Certificates (*.pem *.crt);;All files (*)</source>
        <translation>Zertifikate (*.pem *.crt);;Alle Dateien (*)</translation>
    </message>
    <message>
        <source>C&amp;hoose…</source>
        <translation>Aus&amp;wählen…</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ContributionActions</name>
    <message>
        <source>&amp;Contribute</source>
        <translation>&amp;Mitmachen</translation>
    </message>
    <message>
        <source>Pause for &amp;1 hour</source>
        <translation>&amp;1 Stunde pausieren</translation>
    </message>
    <message>
        <source>Pause &amp;until I resume</source>
        <translation>Pausieren, &amp;bis ich fortsetze</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>&amp;Fortsetzen</translation>
    </message>
    <message>
        <source>&amp;Try again</source>
        <translation>&amp;Erneut versuchen</translation>
    </message>
</context>
<context>
    <name>tessera::ui::CreditsBox</name>
    <message>
        <source>Your credits</source>
        <translation>Ihre Credits</translation>
    </message>
    <message>
        <source>Credits today</source>
        <translation>Credits heute</translation>
    </message>
    <message>
        <source>Credits in total</source>
        <translation>Credits insgesamt</translation>
    </message>
    <message>
        <source>Credits pending</source>
        <translation>Ausstehende Credits</translation>
    </message>
    <message>
        <source>Work the swarm accepted that is not credit yet: it becomes a signed receipt once the coordinator&apos;s checks of this computer&apos;s results have covered it (usually within minutes).</source>
        <translation>Vom Schwarm angenommene Arbeit, die noch nicht gutgeschrieben ist: Sie wird zu einer signierten Quittung, sobald die Prüfungen des Koordinators an den Ergebnissen dieses Computers sie erfasst haben (meist innerhalb weniger Minuten).</translation>
    </message>
    <message>
        <source>Credits count the work this computer did for the swarm that was checked and accepted. Each arrives as a receipt signed by the coordinator and is kept on this computer.</source>
        <translation>Credits zählen die Arbeit, die dieser Computer für den Schwarm geleistet hat und die geprüft und angenommen wurde. Jeder Credit kommt als vom Koordinator signierte Quittung an und wird auf diesem Computer aufbewahrt.</translation>
    </message>
    <message>
        <source>1 credit = 10&lt;sup&gt;15&lt;/sup&gt; floating-point operations of accepted work.</source>
        <translation>1 Credit = 10&lt;sup&gt;15&lt;/sup&gt; Gleitkommaoperationen an angenommener Arbeit.</translation>
    </message>
    <message>
        <source>Day &amp;by day…</source>
        <translation>&amp;Tag für Tag…</translation>
    </message>
    <message>
        <source>Today</source>
        <translation>Heute</translation>
    </message>
    <message>
        <source>In total</source>
        <translation>Insgesamt</translation>
    </message>
    <message>
        <source>Pending</source>
        <translation>Ausstehend</translation>
    </message>
    <message>
        <source>No credit granted in the last 24 hours.</source>
        <translation>In den letzten 24 Stunden wurden keine Credits gutgeschrieben.</translation>
    </message>
    <message>
        <source>Earning %1 credits an hour lately · %2 in the last 24 hours</source>
        <translation>Zuletzt %1 Credits pro Stunde · %2 in den letzten 24 Stunden</translation>
    </message>
    <message>
        <source>%1 credits were forfeited: %2</source>
        <translation>%1 Credits sind verfallen: %2</translation>
    </message>
</context>
<context>
    <name>tessera::ui::CreditsDialog</name>
    <message>
        <source>Credits day by day</source>
        <translation>Credits Tag für Tag</translation>
    </message>
    <message>
        <source>Day</source>
        <translation>Tag</translation>
    </message>
    <message>
        <source>Credits</source>
        <translation>Credits</translation>
    </message>
    <message>
        <source>Receipts</source>
        <translation>Quittungen</translation>
    </message>
    <message>
        <source>Credits granted each day</source>
        <translation>Pro Tag gutgeschriebene Credits</translation>
    </message>
    <message>
        <source>&amp;Export as CSV…</source>
        <translation>Als CSV &amp;exportieren…</translation>
    </message>
    <message>
        <source>The credit ledger could not be read: %1</source>
        <translation>Die Aufzeichnung der Credits konnte nicht gelesen werden: %1</translation>
    </message>
    <message numerus="yes">
        <source>%1 credits over the last %n day(s), as the coordinator&apos;s signed receipts on this computer say.</source>
        <translation>
            <numerusform>Letzter %n Tag: %1 Credits, laut den signierten Quittungen des Koordinators auf diesem Computer.</numerusform>
            <numerusform>Letzte %n Tage: %1 Credits, laut den signierten Quittungen des Koordinators auf diesem Computer.</numerusform>
        </translation>
    </message>
    <message>
        <source>Export credits</source>
        <translation>Credits exportieren</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV-Dateien (*.csv)</translation>
    </message>
    <message>
        <source>The credits could not be written to %1: %2</source>
        <translation>Die Credits konnten nicht in %1 geschrieben werden: %2</translation>
    </message>
</context>
<context>
    <name>tessera::ui::DashboardWindow</name>
    <message>
        <source>Tessera</source>
        <translation>Tessera</translation>
    </message>
    <message>
        <source>Last hour</source>
        <translation>Letzte Stunde</translation>
    </message>
    <message>
        <source>Last day</source>
        <translation>Letzter Tag</translation>
    </message>
    <message>
        <source>Last month</source>
        <translation>Letzter Monat</translation>
    </message>
    <message>
        <source>Credits earned</source>
        <translation>Verdiente Credits</translation>
    </message>
    <message>
        <source>credits</source>
        <translation>Credits</translation>
    </message>
    <message>
        <source>Work done by this computer</source>
        <translation>Arbeit dieses Computers</translation>
    </message>
    <message>
        <source>tasks per minute</source>
        <translation>Aufgaben pro Minute</translation>
    </message>
    <message>
        <source>&amp;About</source>
        <translation>Ü&amp;ber</translation>
    </message>
    <message>
        <source> · using up to %1% of the CPU&apos;s time</source>
        <translation> · nutzt bis zu %1 % der CPU-Zeit</translation>
    </message>
    <message>
        <source> · using up to %1% of the GPU&apos;s time</source>
        <translation> · nutzt bis zu %1 % der GPU-Zeit</translation>
    </message>
    <message>
        <source>Quit Tessera?</source>
        <translation>Tessera beenden?</translation>
    </message>
    <message>
        <source>This desktop has no tray, so Tessera cannot keep working out of sight. Quit and stop contributing until you start Tessera again, or keep it running in a minimised window?</source>
        <translation>Diese Arbeitsumgebung hat keinen Infobereich, daher kann Tessera nicht unsichtbar im Hintergrund weiterarbeiten. Beenden und nicht mehr beitragen, bis Sie Tessera wieder starten, oder in einem minimierten Fenster weiterlaufen lassen?</translation>
    </message>
    <message>
        <source>Quit Tessera</source>
        <translation>Tessera beenden</translation>
    </message>
    <message>
        <source>Keep running</source>
        <translation>Weiterlaufen lassen</translation>
    </message>
    <message>
        <source>time computing (%)</source>
        <translation>Rechenzeit (%)</translation>
    </message>
    <message>
        <source>Status icon</source>
        <translation>Statussymbol</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>Status</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>&amp;Pausieren</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>&amp;Fortsetzen</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>Ein&amp;stellungen…</translation>
    </message>
    <message>
        <source>&amp;History:</source>
        <translation>&amp;Verlauf:</translation>
    </message>
    <message>
        <source>Show as &amp;tables</source>
        <translation>Als Ta&amp;bellen anzeigen</translation>
    </message>
    <message>
        <source>The charts&apos; figures as tables, for reading exact values or with a screen reader</source>
        <translation>Die Werte der Diagramme als Tabellen – zum Ablesen genauer Zahlen oder für Screenreader</translation>
    </message>
    <message>
        <source>Part of the history could not be read; the figures shown may be incomplete.</source>
        <translation>Ein Teil des Verlaufs konnte nicht gelesen werden; die angezeigten Werte sind möglicherweise unvollständig.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ErrorNote</name>
    <message>
        <source>&amp;Details</source>
        <translation>&amp;Details</translation>
    </message>
    <message>
        <source>Shows the technical text of the problem</source>
        <translation>Zeigt die technische Beschreibung des Problems</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ExclusiveAppsEditor</name>
    <message>
        <source>Program name, e.g. witcher3.exe</source>
        <translation>Programmname, z. B. witcher3.exe</translation>
    </message>
    <message>
        <source>The common games and game launchers Tessera knows</source>
        <translation>Die gängigen Spiele und Spiele-Launcher, die Tessera kennt</translation>
    </message>
    <message>
        <source>&amp;Add</source>
        <translation>&amp;Hinzufügen</translation>
    </message>
    <message>
        <source>&amp;Remove</source>
        <translation>&amp;Entfernen</translation>
    </message>
    <message>
        <source>Reset to &amp;defaults</source>
        <translation>Auf &amp;Standard zurücksetzen</translation>
    </message>
</context>
<context>
    <name>tessera::ui::FirstRunWizard</name>
    <message>
        <source>Welcome to Tessera</source>
        <translation>Willkommen bei Tessera</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Abbrechen</translation>
    </message>
    <message>
        <source>Stop and leave the swarm; nothing stays running</source>
        <translation>Anhalten und den Schwarm verlassen; nichts läuft weiter</translation>
    </message>
    <message>
        <source>Measuring your computer</source>
        <translation>Ihr Computer wird gemessen</translation>
    </message>
    <message>
        <source>Tessera measures how fast this computer trains the model, to give it a part that fits. This takes about a minute and happens only once.</source>
        <translation>Tessera misst, wie schnell dieser Computer das Modell trainiert, um ihm einen passenden Teil zuzuteilen. Das dauert etwa eine Minute und geschieht nur einmal.</translation>
    </message>
    <message>
        <source>Joining the swarm</source>
        <translation>Beitritt zum Schwarm</translation>
    </message>
    <message>
        <source>Downloading your part of the model</source>
        <translation>Ihr Teil des Modells wird heruntergeladen</translation>
    </message>
    <message>
        <source>Only your part comes to this computer, never the whole model. If the connection drops, the download continues where it stopped.</source>
        <translation>Nur Ihr Teil kommt auf diesen Computer, nie das ganze Modell. Bricht die Verbindung ab, wird der Download dort fortgesetzt, wo er aufgehört hat.</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>Schließen</translation>
    </message>
    <message>
        <source>Measuring…</source>
        <translation>Wird gemessen…</translation>
    </message>
    <message>
        <source>Tessera could not join the swarm</source>
        <translation>Tessera konnte dem Schwarm nicht beitreten</translation>
    </message>
    <message>
        <source>Asking the coordinator for a part of the model to hold…</source>
        <translation>Der Koordinator wird nach einem Teil des Modells gefragt…</translation>
    </message>
    <message>
        <source>Downloaded. Loading your part of the model…</source>
        <translation>Heruntergeladen. Ihr Teil des Modells wird geladen…</translation>
    </message>
    <message>
        <source>You are contributing</source>
        <translation>Sie machen jetzt mit</translation>
    </message>
    <message>
        <source>You are ready to contribute</source>
        <translation>Alles bereit zum Mitmachen</translation>
    </message>
    <message>
        <source>Thank you. Tessera keeps working in the tray and pauses by itself when you play. You can close this window.</source>
        <translation>Vielen Dank! Tessera arbeitet im Infobereich weiter und pausiert von selbst, wenn Sie spielen. Sie können dieses Fenster schließen.</translation>
    </message>
    <message>
        <source>%1. Tessera starts working by itself as soon as it can, and pauses by itself when you play. You can close this window.</source>
        <translation>%1. Tessera beginnt von selbst zu arbeiten, sobald es kann, und pausiert von selbst, wenn Sie spielen. Sie können dieses Fenster schließen.</translation>
    </message>
    <message>
        <source>&amp;Try again</source>
        <translation>&amp;Erneut versuchen</translation>
    </message>
    <message>
        <source>Open the &amp;dashboard</source>
        <translation>&amp;Übersicht öffnen</translation>
    </message>
</context>
<context>
    <name>tessera::ui::GeneralSettingsPage</name>
    <message>
        <source>%1%</source>
        <translation>%1 %</translation>
    </message>
    <message>
        <source>The share of time the GPU computes for Tessera. Lower keeps the card cooler and quieter; the change applies at once.</source>
        <translation>Der Anteil der Zeit, in der die GPU für Tessera rechnet. Ein niedrigerer Wert hält die Karte kühler und leiser; die Änderung gilt sofort.</translation>
    </message>
    <message>
        <source>Start Tessera when I log in</source>
        <translation>Tessera bei der Anmeldung starten</translation>
    </message>
    <message>
        <source>Tell me when Tessera pauses, resumes or has a problem</source>
        <translation>Mich benachrichtigen, wenn Tessera pausiert, weitermacht oder ein Problem hat</translation>
    </message>
    <message>
        <source>The default folder</source>
        <translation>Der Standardordner</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>Auswählen…</translation>
    </message>
    <message>
        <source> GB</source>
        <translation> GB</translation>
    </message>
    <message>
        <source>GPU usage limit:</source>
        <translation>GPU-Nutzungsgrenze:</translation>
    </message>
    <message>
        <source>Data folder:</source>
        <translation>Datenordner:</translation>
    </message>
    <message>
        <source>Disk space limit:</source>
        <translation>Speicherplatzgrenze:</translation>
    </message>
    <message>
        <source>Tessera&apos;s data folder</source>
        <translation>Datenordner von Tessera</translation>
    </message>
    <message>
        <source>Anonymous</source>
        <translation>Anonym</translation>
    </message>
    <message>
        <source>No team</source>
        <translation>Kein Team</translation>
    </message>
    <message>
        <source>Both are public: anyone who opens the coordinator&apos;s page sees them next to your credits. Leave them empty to stay anonymous.</source>
        <translation>Beide sind öffentlich: Wer die Seite des Koordinators öffnet, sieht sie neben Ihren Credits. Lassen Sie sie leer, um anonym zu bleiben.</translation>
    </message>
    <message>
        <source>Name on the leaderboard (optional):</source>
        <translation>Name in der Bestenliste (optional):</translation>
    </message>
    <message>
        <source>Team (optional):</source>
        <translation>Team (optional):</translation>
    </message>
    <message>
        <source>At most %1 characters.</source>
        <translation>Höchstens %1 Zeichen.</translation>
    </message>
    <message>
        <source>Only printable characters: no line breaks, tabs or invisible characters.</source>
        <translation>Nur druckbare Zeichen: keine Zeilenumbrüche, Tabulatoren oder unsichtbaren Zeichen.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::HistoryView</name>
    <message>
        <source>Day</source>
        <translation>Tag</translation>
    </message>
    <message>
        <source>Time</source>
        <translation>Uhrzeit</translation>
    </message>
    <message>
        <source>%1: now %2, highest %3</source>
        <translation>%1: aktuell %2, Höchstwert %3</translation>
    </message>
</context>
<context>
    <name>tessera::ui::InstanceBlockedMessage</name>
    <message>
        <source>Tessera cannot start: %1 is held by another user (uid %2), so this app cannot make sure that it runs only once.</source>
        <translation>Tessera kann nicht starten: %1 gehört einem anderen Benutzer (UID %2), daher kann diese App nicht sicherstellen, dass sie nur einmal läuft.</translation>
    </message>
    <message>
        <source>Tessera cannot start: %1 is in the way (%2).</source>
        <translation>Tessera kann nicht starten: %1 steht im Weg (%2).</translation>
    </message>
    <message>
        <source>Ask your administrator to remove it, or set XDG_RUNTIME_DIR to a folder that only you can use, then start Tessera again.</source>
        <translation>Bitten Sie Ihren Administrator, es zu entfernen, oder setzen Sie XDG_RUNTIME_DIR auf einen Ordner, den nur Sie verwenden können, und starten Sie Tessera dann erneut.</translation>
    </message>
    <message>
        <source>Tessera cannot start</source>
        <translation>Tessera kann nicht starten</translation>
    </message>
</context>
<context>
    <name>tessera::ui::PauseRulesPage</name>
    <message>
        <source>Pause while one of these programs runs</source>
        <translation>Pausieren, während eines dieser Programme läuft</translation>
    </message>
    <message>
        <source>Also pause</source>
        <translation>Außerdem pausieren</translation>
    </message>
    <message>
        <source>while a program fills the whole screen (games, videos)</source>
        <translation>während ein Programm den ganzen Bildschirm ausfüllt (Spiele, Videos)</translation>
    </message>
    <message>
        <source>while another program draws on the graphics card</source>
        <translation>während ein anderes Programm auf der Grafikkarte zeichnet</translation>
    </message>
    <message>
        <source>while I use the computer; contribute only after I have been away for</source>
        <translation>während ich den Computer benutze; erst beitragen, wenn ich länger weg bin als</translation>
    </message>
    <message>
        <source> min</source>
        <translation> Min.</translation>
    </message>
    <message>
        <source>while the computer runs on battery</source>
        <translation>während der Computer im Akkubetrieb läuft</translation>
    </message>
    <message>
        <source>while the graphics card is hotter than</source>
        <translation>während die Grafikkarte heißer ist als</translation>
    </message>
    <message>
        <source> °C</source>
        <translation> °C</translation>
    </message>
    <message>
        <source>Contribute only at these times</source>
        <translation>Nur zu diesen Zeiten beitragen</translation>
    </message>
    <message>
        <source>Any time. For example: Mon-Fri 18:00-08:00, Sat-Sun</source>
        <translation>Jederzeit. Zum Beispiel: Mon-Fri 18:00-08:00, Sat-Sun</translation>
    </message>
    <message>
        <source>This computer cannot tell when a program fills the screen: that needs an X11 desktop session.</source>
        <translation>Dieser Computer kann nicht erkennen, wann ein Programm den ganzen Bildschirm füllt: Dazu ist eine X11-Desktop-Sitzung nötig.</translation>
    </message>
    <message>
        <source>This computer cannot tell when you are using it: that needs an X11 desktop session that reports idle time.</source>
        <translation>Dieser Computer kann nicht erkennen, wann Sie ihn benutzen: Dazu ist eine X11-Desktop-Sitzung nötig, die die Leerlaufzeit meldet.</translation>
    </message>
    <message>
        <source>This computer cannot tell: no NVIDIA graphics card with its driver was found.</source>
        <translation>Dieser Computer kann es nicht erkennen: Es wurde keine NVIDIA-Grafikkarte mit Treiber gefunden.</translation>
    </message>
    <message>
        <source>This computer cannot tell: it has no battery, or its power service (UPower) is not running.</source>
        <translation>Dieser Computer kann es nicht erkennen: Er hat keinen Akku, oder sein Energiedienst (UPower) läuft nicht.</translation>
    </message>
    <message>
        <source>This computer cannot tell, so this rule will not pause Tessera.</source>
        <translation>Dieser Computer kann es nicht erkennen, daher pausiert diese Regel Tessera nicht.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::SettingsDialog</name>
    <message>
        <source>Tessera Settings</source>
        <translation>Tessera-Einstellungen</translation>
    </message>
    <message>
        <source>&amp;General</source>
        <translation>&amp;Allgemein</translation>
    </message>
    <message>
        <source>When to &amp;pause</source>
        <translation>Wann &amp;pausieren</translation>
    </message>
    <message>
        <source>&amp;Coordinator</source>
        <translation>&amp;Koordinator</translation>
    </message>
</context>
<context>
    <name>tessera::ui::SwarmPanel</name>
    <message>
        <source>The swarm</source>
        <translation>Der Schwarm</translation>
    </message>
    <message>
        <source>Waiting for the coordinator&apos;s answer…</source>
        <translation>Warten auf die Antwort des Koordinators…</translation>
    </message>
    <message>
        <source>Training loss (lower is better)</source>
        <translation>Trainingsverlust (niedriger ist besser)</translation>
    </message>
    <message>
        <source>step</source>
        <translation>Schritt</translation>
    </message>
    <message>
        <source>1 volunteer online</source>
        <translation>1 Freiwilliger online</translation>
    </message>
    <message>
        <source>%1 volunteers online</source>
        <translation>%1 Freiwillige online</translation>
    </message>
    <message>
        <source>step %1</source>
        <translation>Schritt %1</translation>
    </message>
    <message>
        <source>loss %1</source>
        <translation>Verlust %1</translation>
    </message>
    <message>
        <source>%1 tokens/s</source>
        <translation>%1 Tokens/s</translation>
    </message>
    <message>
        <source>The coordinator is not answering; Tessera keeps asking.</source>
        <translation>Der Koordinator antwortet nicht; Tessera fragt weiter nach.</translation>
    </message>
    <message>
        <source>The coordinator is not answering; the figures above are the last it gave.</source>
        <translation>Der Koordinator antwortet nicht; oben stehen die zuletzt gemeldeten Werte.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::TrayController</name>
    <message>
        <source>Dashboard</source>
        <translation>Übersicht</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>Einstellungen…</translation>
    </message>
    <message>
        <source>About Tessera…</source>
        <translation>Über Tessera…</translation>
    </message>
    <message>
        <source>Quit Tessera</source>
        <translation>Tessera beenden</translation>
    </message>
    <message>
        <source>Tessera — %1
Today: %2 credits (%3 pending)</source>
        <translation>Tessera – %1
Heute: %2 Credits (%3 ausstehend)</translation>
    </message>
</context>
<context>
    <name>tessera::ui::WelcomePage</name>
    <message>
        <source>Help train an open language model</source>
        <translation>Helfen Sie, ein offenes Sprachmodell zu trainieren</translation>
    </message>
    <message>
        <source>Tessera lends your graphics card&apos;s spare time to volunteers who train a large language model together: your computer holds one small part of the model and earns credits for the work it does.</source>
        <translation>Tessera stellt die ungenutzte Zeit Ihrer Grafikkarte Freiwilligen zur Verfügung, die gemeinsam ein großes Sprachmodell trainieren: Ihr Computer übernimmt einen kleinen Teil des Modells und verdient Credits für die Arbeit, die er leistet.</translation>
    </message>
    <message>
        <source>It pauses by itself the moment you start a game or the computer needs its graphics card, and it never needs your attention.</source>
        <translation>Tessera pausiert von selbst, sobald Sie ein Spiel starten oder der Computer seine Grafikkarte braucht, und kommt ganz ohne Ihr Zutun aus.</translation>
    </message>
    <message>
        <source>Coordinator address</source>
        <translation>Koordinator-Adresse</translation>
    </message>
    <message>
        <source>Coordinator &amp;address:</source>
        <translation>Koordinator-&amp;Adresse:</translation>
    </message>
    <message>
        <source>Certificate fingerprint (SHA-256)</source>
        <translation>Fingerabdruck des Zertifikats (SHA-256)</translation>
    </message>
    <message>
        <source>&amp;Trust this coordinator</source>
        <translation>Diesem Koordinator &amp;vertrauen</translation>
    </message>
    <message>
        <source>&amp;Contribute</source>
        <translation>&amp;Mitmachen</translation>
    </message>
    <message>
        <source>&amp;Not now</source>
        <translation>&amp;Nicht jetzt</translation>
    </message>
    <message>
        <source>Checking the coordinator at %1…</source>
        <translation>Koordinator unter %1 wird geprüft…</translation>
    </message>
    <message>
        <source>SHA-256 fingerprint:</source>
        <translation>SHA-256-Fingerabdruck:</translation>
    </message>
    <message>
        <source>Tessera could not keep the coordinator&apos;s certificate.</source>
        <translation>Tessera konnte das Zertifikat des Koordinators nicht speichern.</translation>
    </message>
</context>
</TS>
