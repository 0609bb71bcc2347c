<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ru_RU">
<context>
    <name>NodeStatusText</name>
    <message>
        <source>1 second</source>
        <translation>1 с</translation>
    </message>
    <message>
        <source>%1 seconds</source>
        <translation>%1 с</translation>
    </message>
    <message>
        <source>1 minute</source>
        <translation>1 мин</translation>
    </message>
    <message>
        <source>%1 minutes</source>
        <translation>%1 мин</translation>
    </message>
    <message>
        <source>%1 hours</source>
        <translation>%1 ч</translation>
    </message>
    <message>
        <source>%1 MB</source>
        <translation>%1 MB</translation>
    </message>
    <message>
        <source>Your CPU</source>
        <translation>Ваш CPU</translation>
    </message>
    <message>
        <source>Your graphics card</source>
        <translation>Ваша видеокарта</translation>
    </message>
    <message>
        <source>Your CPU (%1)</source>
        <translation>Ваш CPU (%1)</translation>
    </message>
    <message>
        <source>Your %1</source>
        <translation>Ваша видеокарта %1</translation>
    </message>
    <message>
        <source>%1: about %2 TFLOP/s in %3</source>
        <translation>%1: около %2 TFLOP/s в формате %3</translation>
    </message>
    <message>
        <source>No NVIDIA GPU found — contributing with the CPU</source>
        <translation>GPU NVIDIA не найден — вычисления идут на CPU</translation>
    </message>
    <message>
        <source>You hold stage %1 of the model</source>
        <translation>У вас стадия %1 модели</translation>
    </message>
    <message>
        <source>You hold stage %1 of %2 of the model</source>
        <translation>У вас стадия %1 из %2 модели</translation>
    </message>
    <message>
        <source>The swarm is full right now. Tessera will try again by itself — you can close this window.</source>
        <translation>Сейчас в рое нет свободных мест. Tessera сама попробует снова — это окно можно закрыть.</translation>
    </message>
    <message>
        <source>The swarm is full right now. Tessera will try again in %1 — you can close this window.</source>
        <translation>Сейчас в рое нет свободных мест. Tessera попробует снова через %1 — это окно можно закрыть.</translation>
    </message>
    <message>
        <source>Asking for the model&apos;s part…</source>
        <translation>Запрос части модели…</translation>
    </message>
    <message>
        <source>%1 of %2</source>
        <translation>%1 из %2</translation>
    </message>
    <message>
        <source>%1/s</source>
        <translation>%1/s</translation>
    </message>
    <message>
        <source>about %1 left</source>
        <translation>осталось около %1</translation>
    </message>
    <message>
        <source>The coordinator at this address is not the one Tessera joined before: its identity key changed. Check the address in Settings. If its operator announced a new key, remove coordinator.json from Tessera&apos;s data folder and try again.</source>
        <translation>По этому адресу находится не тот координатор, к которому Tessera подключалась раньше: его ключ идентификации изменился. Проверьте адрес в настройках. Если оператор координатора объявил о новом ключе, удалите coordinator.json из папки данных Tessera и попробуйте снова.</translation>
    </message>
    <message>
        <source>This computer does not have enough memory for any part of the model. There is nothing to fix on your side; a smaller model may fit later.</source>
        <translation>На этом компьютере недостаточно памяти ни для одной части модели. С вашей стороны ничего исправлять не нужно; позже может подойти модель поменьше.</translation>
    </message>
    <message>
        <source>This version of Tessera is too old for the swarm. Install the latest version and try again.</source>
        <translation>Эта версия Tessera слишком старая для роя. Установите последнюю версию и попробуйте снова.</translation>
    </message>
    <message>
        <source>The coordinator found results from this computer that were not the model&apos;s work (a failed check of its results) and no longer accepts it for a while. If you did not modify Tessera, check that your graphics card is stable (no overclock) and contact the coordinator&apos;s operator.</source>
        <translation>Координатор обнаружил, что результаты этого компьютера не являются работой модели (его результаты не прошли проверку), и на время перестал его принимать. Если вы не изменяли Tessera, убедитесь, что видеокарта работает стабильно (без разгона), и свяжитесь с оператором координатора.</translation>
    </message>
    <message>
        <source>Check the coordinator&apos;s address in Settings, then try again.</source>
        <translation>Проверьте адрес координатора в настройках и попробуйте снова.</translation>
    </message>
    <message>
        <source>The coordinator is still preparing the model (%1% ready). Tessera will try again by itself — you can close this window.</source>
        <translation>Координатор ещё готовит модель (готово %1%). Tessera сама попробует снова — это окно можно закрыть.</translation>
    </message>
    <message>
        <source>The coordinator is still preparing the model (%1% ready). Tessera will try again in %2 — you can close this window.</source>
        <translation>Координатор ещё готовит модель (готово %1%). Tessera попробует снова через %2 — это окно можно закрыть.</translation>
    </message>
</context>
<context>
    <name>PauseReason</name>
    <message>
        <source>on battery</source>
        <translation>работа от батареи</translation>
    </message>
    <message>
        <source>a game is running: %1</source>
        <translation>запущена игра: %1</translation>
    </message>
    <message>
        <source>a full-screen app is in front: %1</source>
        <translation>на переднем плане полноэкранное приложение: %1</translation>
    </message>
    <message>
        <source>an unnamed app</source>
        <translation>приложение без названия</translation>
    </message>
    <message>
        <source>a game is using the GPU: %1</source>
        <translation>игра использует GPU: %1</translation>
    </message>
    <message>
        <source>the GPU is at %1 °C (limit %2 °C)</source>
        <translation>температура GPU %1 °C (предел %2 °C)</translation>
    </message>
    <message>
        <source>outside your contributing hours (%1)</source>
        <translation>вне выбранного вами времени участия (%1)</translation>
    </message>
    <message>
        <source>you are using the computer — contributing only when idle</source>
        <translation>вы пользуетесь компьютером — участие только во время простоя</translation>
    </message>
    <message>
        <source>you paused it until you resume</source>
        <translation>вы приостановили работу до возобновления вручную</translation>
    </message>
    <message>
        <source>you paused it until %1</source>
        <translation>вы приостановили работу до %1</translation>
    </message>
    <message>
        <source>your pause is over, but a game is still running</source>
        <translation>ваша пауза закончилась, но игра ещё запущена</translation>
    </message>
    <message>
        <source>resuming in %1 s</source>
        <translation>возобновление через %1 с</translation>
    </message>
</context>
<context>
    <name>tessera::manager::CoordinatorCheck</name>
    <message>
        <source>“%1” is not a coordinator address. An address looks like https://coordinator.example.org:7443</source>
        <translation>«%1» — не адрес координатора. Адрес выглядит так: https://coordinator.example.org:7443</translation>
    </message>
    <message>
        <source>The certificate file set for the coordinator cannot be read. Choose it again in Settings, or clear it.</source>
        <translation>Не удаётся прочитать файл сертификата, указанный для координатора. Выберите его снова в настройках или очистите поле.</translation>
    </message>
    <message>
        <source>The coordinator at %1 uses a certificate that no authority this computer trusts has signed. If your swarm&apos;s operator gave you its fingerprint and it matches the one below, you can trust this coordinator.</source>
        <translation>Координатор по адресу %1 использует сертификат, не подписанный ни одним центром сертификации, которому доверяет этот компьютер. Если оператор вашего роя сообщил вам отпечаток сертификата и он совпадает с приведённым ниже, этому координатору можно доверять.</translation>
    </message>
    <message>
        <source>The coordinator&apos;s certificate is not made out for %1. Use the address your swarm&apos;s operator gave you (the name in the certificate: %2).</source>
        <translation>Сертификат координатора выдан не для %1. Используйте адрес, который дал вам оператор роя (имя в сертификате: %2).</translation>
    </message>
    <message>
        <source>The secure connection to the coordinator at %1 failed. Check the computer&apos;s date and time, then try again.</source>
        <translation>Не удалось установить защищённое соединение с координатором по адресу %1. Проверьте дату и время на компьютере и попробуйте снова.</translation>
    </message>
    <message>
        <source>There is no computer named %1. Check the address for typing mistakes.</source>
        <translation>Компьютер с именем %1 не найден. Проверьте, нет ли в адресе опечаток.</translation>
    </message>
    <message>
        <source>The coordinator at %1 did not answer within %2 seconds. Check the address and this computer&apos;s internet connection, then try again.</source>
        <translation>Координатор по адресу %1 не ответил за %2 с. Проверьте адрес и подключение этого компьютера к интернету и попробуйте снова.</translation>
    </message>
    <message>
        <source>Nothing answers at %1: the coordinator is not running there, or the address or port is wrong. Check the address, then try again.</source>
        <translation>По адресу %1 никто не отвечает: координатор там не запущен или указан неверный адрес либо порт. Проверьте адрес и попробуйте снова.</translation>
    </message>
    <message>
        <source>The coordinator at %1 cannot be reached. Check the address and this computer&apos;s internet connection, then try again.</source>
        <translation>Координатор по адресу %1 недоступен. Проверьте адрес и подключение этого компьютера к интернету и попробуйте снова.</translation>
    </message>
    <message>
        <source>Something answers at %1, but it is not a Tessera coordinator. Check the address your swarm&apos;s operator gave you.</source>
        <translation>По адресу %1 что-то отвечает, но это не координатор Tessera. Проверьте адрес, который дал вам оператор роя.</translation>
    </message>
    <message>
        <source>HTTP status %1 for /v1/info</source>
        <translation>HTTP-статус %1 для /v1/info</translation>
    </message>
    <message>
        <source>The coordinator at %1 answers.</source>
        <translation>Координатор по адресу %1 отвечает.</translation>
    </message>
    <message>
        <source>The coordinator at %1 presents a different certificate from the one this computer trusts for it. Trust the new one only if your swarm&apos;s operator told you it changed and its fingerprint matches the one below; otherwise someone may be impersonating the coordinator.</source>
        <translation>Координатор по адресу %1 предъявляет другой сертификат, чем тот, которому этот компьютер для него доверяет. Доверяйте новому, только если оператор вашего роя сообщил вам о его смене и его отпечаток совпадает с приведённым ниже; иначе кто-то может выдавать себя за координатора.</translation>
    </message>
</context>
<context>
    <name>tessera::manager::Manager</name>
    <message>
        <source>Tessera&apos;s node stopped</source>
        <translation>Узел Tessera остановлен</translation>
    </message>
    <message>
        <source>Tessera paused</source>
        <translation>Tessera приостановлена</translation>
    </message>
    <message>
        <source>Tessera resumed</source>
        <translation>Tessera возобновила работу</translation>
    </message>
    <message>
        <source>Contributing again.</source>
        <translation>Вы снова участвуете.</translation>
    </message>
    <message>
        <source>Start at login</source>
        <translation>Запуск при входе в систему</translation>
    </message>
    <message>
        <source>stage %1 of %2</source>
        <translation>стадия %1 из %2</translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation>стадия %1</translation>
    </message>
    <message>
        <source>Not contributing — click Contribute to lend your GPU</source>
        <translation>Вы не участвуете — нажмите «Участвовать», чтобы предоставить свой GPU</translation>
    </message>
    <message>
        <source>Stopped — this stage of the model needs %1 on disk; your limit is %2 (Settings → Data folder)</source>
        <translation>Остановлено — этой стадии модели нужно %1 на диске, а ваш предел — %2 (Настройки → Папка данных)</translation>
    </message>
    <message>
        <source>Paused — %1</source>
        <translation>Приостановлено — %1</translation>
    </message>
    <message>
        <source>Stopped — %1</source>
        <translation>Остановлено — %1</translation>
    </message>
    <message>
        <source>Waiting — %1; starting it again</source>
        <translation>Ожидание — %1; повторный запуск</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>Запуск…</translation>
    </message>
    <message>
        <source>Measuring your GPU…</source>
        <translation>Измерение скорости вашего GPU…</translation>
    </message>
    <message>
        <source>Asking the coordinator for a place in the swarm…</source>
        <translation>Запрос места в рое у координатора…</translation>
    </message>
    <message>
        <source>Waiting — the swarm has no room right now; trying again in %1</source>
        <translation>Ожидание — сейчас в рое нет свободных мест; повтор через %1</translation>
    </message>
    <message>
        <source>Downloading %1 of the model: %2</source>
        <translation>Загрузка части модели (%1): %2</translation>
    </message>
    <message>
        <source>Joining the swarm with %1 of the model…</source>
        <translation>Подключение к рою (%1)…</translation>
    </message>
    <message>
        <source>Lost contact with the coordinator — reconnecting</source>
        <translation>Связь с координатором потеряна — переподключение</translation>
    </message>
    <message>
        <source>Contributing to %1 of the model</source>
        <translation>Участие в обучении модели: %1</translation>
    </message>
    <message>
        <source>Waiting for other volunteers (stage %1 has nobody yet)</source>
        <translation>Ожидание других добровольцев (на стадии %1 пока никого нет)</translation>
    </message>
    <message>
        <source>Waiting for work from the coordinator</source>
        <translation>Ожидание заданий от координатора</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>Приостановлено</translation>
    </message>
    <message>
        <source>Waiting — the node is stopping</source>
        <translation>Ожидание — узел останавливается</translation>
    </message>
    <message>
        <source>Waiting — the coordinator could not be reached or did not let this computer join; trying again in %1</source>
        <translation>Ожидание — координатор недоступен или не принял этот компьютер; повтор через %1</translation>
    </message>
    <message>
        <source>Waiting — the coordinator is preparing the model (%1% ready); trying again in %2</source>
        <translation>Ожидание — координатор готовит модель (готово %1%); повтор через %2</translation>
    </message>
</context>
<context>
    <name>tessera::manager::NodeSupervisor</name>
    <message>
        <source>cannot start %1: %2</source>
        <translation>не удаётся запустить %1: %2</translation>
    </message>
    <message>
        <source>the node was killed — the computer may have run out of memory, or another program ended it</source>
        <translation>узел был принудительно завершён — возможно, компьютеру не хватило памяти или его закрыла другая программа</translation>
    </message>
    <message>
        <source>the node crashed on a memory fault (a bug in Tessera; signal %1)</source>
        <translation>узел аварийно завершился из-за ошибки доступа к памяти (ошибка в Tessera; сигнал %1)</translation>
    </message>
    <message>
        <source>the node crashed on an internal error (a bug in Tessera; signal %1)</source>
        <translation>узел аварийно завершился из-за внутренней ошибки (ошибка в Tessera; сигнал %1)</translation>
    </message>
    <message>
        <source>the node crashed: this processor lacks an instruction it used (signal %1)</source>
        <translation>узел аварийно завершился: этот процессор не поддерживает нужную ему инструкцию (сигнал %1)</translation>
    </message>
    <message>
        <source>the node crashed on an arithmetic fault (a bug in Tessera; signal %1)</source>
        <translation>узел аварийно завершился из-за арифметической ошибки (ошибка в Tessera; сигнал %1)</translation>
    </message>
    <message>
        <source>the node crashed (signal %1)</source>
        <translation>узел аварийно завершился (сигнал %1)</translation>
    </message>
    <message>
        <source>the node stopped with exit code %1</source>
        <translation>узел остановился с кодом выхода %1</translation>
    </message>
    <message>
        <source>%1; restarting in %2 s</source>
        <translation>%1; перезапуск через %2 с</translation>
    </message>
</context>
<context>
    <name>tessera::ui::AboutBox</name>
    <message>
        <source>About Tessera</source>
        <translation>О программе Tessera</translation>
    </message>
    <message>
        <source>&lt;b&gt;Tessera %1&lt;/b&gt;&lt;p&gt;Lend your GPU to the training of a large language model.&lt;/p&gt;</source>
        <translation>&lt;b&gt;Tessera %1&lt;/b&gt;&lt;p&gt;Предоставьте свой GPU для обучения большой языковой модели.&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p&gt;Copyright 2026 The Tessera contributors.&lt;/p&gt;&lt;p&gt;Tessera is free software, licensed under the &lt;a href=&quot;https://www.apache.org/licenses/LICENSE-2.0&quot;&gt;Apache License, Version 2.0&lt;/a&gt;. It comes with no warranty.&lt;/p&gt;&lt;p&gt;It uses Qt %1 (LGPLv3) and LibTorch (BSD), each under its own licence.&lt;/p&gt;</source>
        <translation>&lt;p&gt;© 2026 Участники проекта Tessera.&lt;/p&gt;&lt;p&gt;Tessera — свободное программное обеспечение, распространяемое по &lt;a href=&quot;https://www.apache.org/licenses/LICENSE-2.0&quot;&gt;лицензии Apache, версия 2.0&lt;/a&gt;. Оно предоставляется без каких-либо гарантий.&lt;/p&gt;&lt;p&gt;Программа использует Qt %1 (LGPLv3) и LibTorch (BSD), каждая — под своей лицензией.&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ConnectionSettingsPage</name>
    <message>
        <source>None: the system&apos;s trusted authorities</source>
        <translation>Нет: доверенные центры сертификации системы</translation>
    </message>
    <message>
        <source>Change these only if the swarm&apos;s operator asked you to. Tessera starts its node again with the new address; what you earned stays yours.</source>
        <translation>Меняйте эти настройки, только если вас об этом попросил оператор роя. Tessera перезапустит свой узел с новым адресом; всё заработанное останется вашим.</translation>
    </message>
    <message>
        <source>Coordinator address:</source>
        <translation>Адрес координатора:</translation>
    </message>
    <message>
        <source>Certificate (PEM):</source>
        <translation>Сертификат (PEM):</translation>
    </message>
    <message>
        <source>Enter the coordinator&apos;s address.</source>
        <translation>Введите адрес координатора.</translation>
    </message>
    <message>
        <source>An address looks like https://coordinator.example.org:7443</source>
        <translation>Адрес выглядит так: https://coordinator.example.org:7443</translation>
    </message>
    <message>
        <source>There is no readable file at this path.</source>
        <translation>По этому пути нет файла, доступного для чтения.</translation>
    </message>
    <message>
        <source>The coordinator&apos;s certificate</source>
        <translation>Сертификат координатора</translation>
    </message>
    <message>
        <source>Certificates (*.pem *.crt);;All files (*)</source>
        <translation>Сертификаты (*.pem *.crt);;Все файлы (*)</translation>
    </message>
    <message>
        <source>C&amp;hoose…</source>
        <translation>&amp;Выбрать…</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ContributionActions</name>
    <message>
        <source>&amp;Contribute</source>
        <translation>&amp;Участвовать</translation>
    </message>
    <message>
        <source>Pause for &amp;1 hour</source>
        <translation>Приостановить на &amp;1 час</translation>
    </message>
    <message>
        <source>Pause &amp;until I resume</source>
        <translation>Приостановить &amp;до возобновления вручную</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>&amp;Возобновить</translation>
    </message>
    <message>
        <source>&amp;Try again</source>
        <translation>Попробовать &amp;снова</translation>
    </message>
</context>
<context>
    <name>tessera::ui::CreditsBox</name>
    <message>
        <source>Your credits</source>
        <translation>Ваши кредиты</translation>
    </message>
    <message>
        <source>Credits today</source>
        <translation>Кредиты за сегодня</translation>
    </message>
    <message>
        <source>Credits in total</source>
        <translation>Всего кредитов</translation>
    </message>
    <message>
        <source>Credits pending</source>
        <translation>Кредиты в ожидании</translation>
    </message>
    <message>
        <source>Work the swarm accepted that is not credit yet: it becomes a signed receipt once the coordinator&apos;s checks of this computer&apos;s results have covered it (usually within minutes).</source>
        <translation>Работа, принятая роем, но ещё не ставшая кредитами: она превратится в подписанную квитанцию, когда координатор проверит соответствующие результаты этого компьютера (обычно в течение нескольких минут).</translation>
    </message>
    <message>
        <source>Credits count the work this computer did for the swarm that was checked and accepted. Each arrives as a receipt signed by the coordinator and is kept on this computer.</source>
        <translation>Кредиты начисляются за работу, которую этот компьютер выполнил для роя и которая прошла проверку и была принята. Каждый кредит приходит в виде квитанции, подписанной координатором, и хранится на этом компьютере.</translation>
    </message>
    <message>
        <source>1 credit = 10&lt;sup&gt;15&lt;/sup&gt; floating-point operations of accepted work.</source>
        <translation>1 кредит = 10&lt;sup&gt;15&lt;/sup&gt; операций с плавающей точкой в принятой работе.</translation>
    </message>
    <message>
        <source>Day &amp;by day…</source>
        <translation>По &amp;дням…</translation>
    </message>
    <message>
        <source>Today</source>
        <translation>Сегодня</translation>
    </message>
    <message>
        <source>In total</source>
        <translation>Всего</translation>
    </message>
    <message>
        <source>Pending</source>
        <translation>В ожидании</translation>
    </message>
    <message>
        <source>No credit granted in the last 24 hours.</source>
        <translation>За последние 24 часа кредиты не начислялись.</translation>
    </message>
    <message>
        <source>Earning %1 credits an hour lately · %2 in the last 24 hours</source>
        <translation>Кредитов в час за последнее время: %1 · за последние 24 часа: %2</translation>
    </message>
    <message>
        <source>%1 credits were forfeited: %2</source>
        <translation>Аннулировано кредитов: %1 — %2</translation>
    </message>
</context>
<context>
    <name>tessera::ui::CreditsDialog</name>
    <message>
        <source>Credits day by day</source>
        <translation>Кредиты по дням</translation>
    </message>
    <message>
        <source>Day</source>
        <translation>День</translation>
    </message>
    <message>
        <source>Credits</source>
        <translation>Кредиты</translation>
    </message>
    <message>
        <source>Receipts</source>
        <translation>Квитанции</translation>
    </message>
    <message>
        <source>Credits granted each day</source>
        <translation>Кредиты, начисленные за каждый день</translation>
    </message>
    <message>
        <source>&amp;Export as CSV…</source>
        <translation>&amp;Экспорт в CSV…</translation>
    </message>
    <message>
        <source>The credit ledger could not be read: %1</source>
        <translation>Не удалось прочитать журнал кредитов: %1</translation>
    </message>
    <message numerus="yes">
        <source>%1 credits over the last %n day(s), as the coordinator&apos;s signed receipts on this computer say.</source>
        <translation>
            <numerusform>Кредитов за последний %n день: %1 — по подписанным квитанциям координатора на этом компьютере.</numerusform>
            <numerusform>Кредитов за последние %n дня: %1 — по подписанным квитанциям координатора на этом компьютере.</numerusform>
            <numerusform>Кредитов за последние %n дней: %1 — по подписанным квитанциям координатора на этом компьютере.</numerusform>
        </translation>
    </message>
    <message>
        <source>Export credits</source>
        <translation>Экспорт кредитов</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>Файлы CSV (*.csv)</translation>
    </message>
    <message>
        <source>The credits could not be written to %1: %2</source>
        <translation>Не удалось записать кредиты в %1: %2</translation>
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
        <translation>Последний час</translation>
    </message>
    <message>
        <source>Last day</source>
        <translation>Последние сутки</translation>
    </message>
    <message>
        <source>Last month</source>
        <translation>Последний месяц</translation>
    </message>
    <message>
        <source>Credits earned</source>
        <translation>Заработанные кредиты</translation>
    </message>
    <message>
        <source>credits</source>
        <translation>кредиты</translation>
    </message>
    <message>
        <source>Work done by this computer</source>
        <translation>Работа, выполненная этим компьютером</translation>
    </message>
    <message>
        <source>tasks per minute</source>
        <translation>заданий в минуту</translation>
    </message>
    <message>
        <source>&amp;About</source>
        <translation>&amp;О программе</translation>
    </message>
    <message>
        <source> · using up to %1% of the CPU&apos;s time</source>
        <translation> · используется до %1% времени CPU</translation>
    </message>
    <message>
        <source> · using up to %1% of the GPU&apos;s time</source>
        <translation> · используется до %1% времени GPU</translation>
    </message>
    <message>
        <source>Quit Tessera?</source>
        <translation>Выйти из Tessera?</translation>
    </message>
    <message>
        <source>This desktop has no tray, so Tessera cannot keep working out of sight. Quit and stop contributing until you start Tessera again, or keep it running in a minimised window?</source>
        <translation>В этой среде рабочего стола нет системного лотка, поэтому Tessera не может работать незаметно. Выйти и прекратить участие до следующего запуска Tessera или оставить её работать в свёрнутом окне?</translation>
    </message>
    <message>
        <source>Quit Tessera</source>
        <translation>Выйти из Tessera</translation>
    </message>
    <message>
        <source>Keep running</source>
        <translation>Продолжить работу</translation>
    </message>
    <message>
        <source>time computing (%)</source>
        <translation>время вычислений (%)</translation>
    </message>
    <message>
        <source>Status icon</source>
        <translation>Значок состояния</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>Состояние</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>&amp;Приостановить</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>&amp;Возобновить</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>&amp;Настройки…</translation>
    </message>
    <message>
        <source>&amp;History:</source>
        <translation>&amp;История:</translation>
    </message>
    <message>
        <source>Show as &amp;tables</source>
        <translation>Показать в виде &amp;таблиц</translation>
    </message>
    <message>
        <source>The charts&apos; figures as tables, for reading exact values or with a screen reader</source>
        <translation>Данные графиков в виде таблиц — чтобы видеть точные значения или читать их с помощью программы чтения с экрана</translation>
    </message>
    <message>
        <source>Part of the history could not be read; the figures shown may be incomplete.</source>
        <translation>Часть истории не удалось прочитать; показанные данные могут быть неполными.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ErrorNote</name>
    <message>
        <source>&amp;Details</source>
        <translation>Подро&amp;бности</translation>
    </message>
    <message>
        <source>Shows the technical text of the problem</source>
        <translation>Показывает техническое описание проблемы</translation>
    </message>
</context>
<context>
    <name>tessera::ui::ExclusiveAppsEditor</name>
    <message>
        <source>Program name, e.g. witcher3.exe</source>
        <translation>Имя программы, например witcher3.exe</translation>
    </message>
    <message>
        <source>The common games and game launchers Tessera knows</source>
        <translation>Распространённые игры и игровые лаунчеры, известные Tessera</translation>
    </message>
    <message>
        <source>&amp;Add</source>
        <translation>&amp;Добавить</translation>
    </message>
    <message>
        <source>&amp;Remove</source>
        <translation>&amp;Удалить</translation>
    </message>
    <message>
        <source>Reset to &amp;defaults</source>
        <translation>Восстановить &amp;стандартный список</translation>
    </message>
</context>
<context>
    <name>tessera::ui::FirstRunWizard</name>
    <message>
        <source>Welcome to Tessera</source>
        <translation>Добро пожаловать в Tessera</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Отмена</translation>
    </message>
    <message>
        <source>Stop and leave the swarm; nothing stays running</source>
        <translation>Остановить и покинуть рой; ничего не останется запущенным</translation>
    </message>
    <message>
        <source>Measuring your computer</source>
        <translation>Измерение скорости компьютера</translation>
    </message>
    <message>
        <source>Tessera measures how fast this computer trains the model, to give it a part that fits. This takes about a minute and happens only once.</source>
        <translation>Tessera измеряет, как быстро этот компьютер обучает модель, чтобы выдать ему подходящую часть. Это займёт около минуты и делается только один раз.</translation>
    </message>
    <message>
        <source>Joining the swarm</source>
        <translation>Подключение к рою</translation>
    </message>
    <message>
        <source>Downloading your part of the model</source>
        <translation>Загрузка вашей части модели</translation>
    </message>
    <message>
        <source>Only your part comes to this computer, never the whole model. If the connection drops, the download continues where it stopped.</source>
        <translation>На этот компьютер загружается только ваша часть, а не вся модель. Если соединение прервётся, загрузка продолжится с того места, где остановилась.</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>Закрыть</translation>
    </message>
    <message>
        <source>Measuring…</source>
        <translation>Измерение…</translation>
    </message>
    <message>
        <source>Tessera could not join the swarm</source>
        <translation>Tessera не удалось подключиться к рою</translation>
    </message>
    <message>
        <source>Asking the coordinator for a part of the model to hold…</source>
        <translation>Запрос части модели у координатора…</translation>
    </message>
    <message>
        <source>Downloaded. Loading your part of the model…</source>
        <translation>Загрузка завершена. Подготовка вашей части модели…</translation>
    </message>
    <message>
        <source>You are contributing</source>
        <translation>Вы участвуете</translation>
    </message>
    <message>
        <source>You are ready to contribute</source>
        <translation>Всё готово к участию</translation>
    </message>
    <message>
        <source>Thank you. Tessera keeps working in the tray and pauses by itself when you play. You can close this window.</source>
        <translation>Спасибо! Tessera продолжит работать в системном лотке и сама приостановится, когда вы играете. Это окно можно закрыть.</translation>
    </message>
    <message>
        <source>%1. Tessera starts working by itself as soon as it can, and pauses by itself when you play. You can close this window.</source>
        <translation>%1. Tessera сама начнёт работать, как только сможет, и сама приостановится, когда вы играете. Это окно можно закрыть.</translation>
    </message>
    <message>
        <source>&amp;Try again</source>
        <translation>Попробовать &amp;снова</translation>
    </message>
    <message>
        <source>Open the &amp;dashboard</source>
        <translation>Открыть &amp;панель</translation>
    </message>
</context>
<context>
    <name>tessera::ui::GeneralSettingsPage</name>
    <message>
        <source>%1%</source>
        <translation>%1%</translation>
    </message>
    <message>
        <source>The share of time the GPU computes for Tessera. Lower keeps the card cooler and quieter; the change applies at once.</source>
        <translation>Доля времени, которую GPU тратит на вычисления для Tessera. Чем меньше значение, тем холоднее и тише видеокарта; изменение применяется сразу.</translation>
    </message>
    <message>
        <source>Start Tessera when I log in</source>
        <translation>Запускать Tessera при входе в систему</translation>
    </message>
    <message>
        <source>Tell me when Tessera pauses, resumes or has a problem</source>
        <translation>Сообщать, когда Tessera приостанавливается, возобновляет работу или сталкивается с проблемой</translation>
    </message>
    <message>
        <source>The default folder</source>
        <translation>Папка по умолчанию</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>Выбрать…</translation>
    </message>
    <message>
        <source> GB</source>
        <translation> GB</translation>
    </message>
    <message>
        <source>GPU usage limit:</source>
        <translation>Предел использования GPU:</translation>
    </message>
    <message>
        <source>Data folder:</source>
        <translation>Папка данных:</translation>
    </message>
    <message>
        <source>Disk space limit:</source>
        <translation>Предел места на диске:</translation>
    </message>
    <message>
        <source>Tessera&apos;s data folder</source>
        <translation>Папка данных Tessera</translation>
    </message>
    <message>
        <source>Anonymous</source>
        <translation>Аноним</translation>
    </message>
    <message>
        <source>No team</source>
        <translation>Без команды</translation>
    </message>
    <message>
        <source>Both are public: anyone who opens the coordinator&apos;s page sees them next to your credits. Leave them empty to stay anonymous.</source>
        <translation>Оба поля публичны: их видит рядом с вашими кредитами любой, кто откроет страницу координатора. Оставьте их пустыми, чтобы остаться анонимным.</translation>
    </message>
    <message>
        <source>Name on the leaderboard (optional):</source>
        <translation>Имя в таблице лидеров (необязательно):</translation>
    </message>
    <message>
        <source>Team (optional):</source>
        <translation>Команда (необязательно):</translation>
    </message>
    <message>
        <source>At most %1 characters.</source>
        <translation>Не более %1 символов.</translation>
    </message>
    <message>
        <source>Only printable characters: no line breaks, tabs or invisible characters.</source>
        <translation>Только печатные символы: без переводов строк, табуляций и невидимых символов.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::HistoryView</name>
    <message>
        <source>Day</source>
        <translation>День</translation>
    </message>
    <message>
        <source>Time</source>
        <translation>Время</translation>
    </message>
    <message>
        <source>%1: now %2, highest %3</source>
        <translation>%1: сейчас %2, максимум %3</translation>
    </message>
</context>
<context>
    <name>tessera::ui::InstanceBlockedMessage</name>
    <message>
        <source>Tessera cannot start: %1 is held by another user (uid %2), so this app cannot make sure that it runs only once.</source>
        <translation>Tessera не может запуститься: %1 принадлежит другому пользователю (uid %2), поэтому программа не может убедиться, что запущена только в одном экземпляре.</translation>
    </message>
    <message>
        <source>Tessera cannot start: %1 is in the way (%2).</source>
        <translation>Tessera не может запуститься: мешает %1 (%2).</translation>
    </message>
    <message>
        <source>Ask your administrator to remove it, or set XDG_RUNTIME_DIR to a folder that only you can use, then start Tessera again.</source>
        <translation>Попросите администратора удалить его или укажите в XDG_RUNTIME_DIR папку, доступную только вам, а затем снова запустите Tessera.</translation>
    </message>
    <message>
        <source>Tessera cannot start</source>
        <translation>Tessera не может запуститься</translation>
    </message>
</context>
<context>
    <name>tessera::ui::PauseRulesPage</name>
    <message>
        <source>Pause while one of these programs runs</source>
        <translation>Приостанавливать, пока запущена одна из этих программ</translation>
    </message>
    <message>
        <source>Also pause</source>
        <translation>Также приостанавливать</translation>
    </message>
    <message>
        <source>while a program fills the whole screen (games, videos)</source>
        <translation>когда программа занимает весь экран (игры, видео)</translation>
    </message>
    <message>
        <source>while another program draws on the graphics card</source>
        <translation>когда другая программа выводит графику через видеокарту</translation>
    </message>
    <message>
        <source>while I use the computer; contribute only after I have been away for</source>
        <translation>когда я пользуюсь компьютером; участвовать, только если меня нет уже</translation>
    </message>
    <message>
        <source> min</source>
        <translation> мин</translation>
    </message>
    <message>
        <source>while the computer runs on battery</source>
        <translation>когда компьютер работает от батареи</translation>
    </message>
    <message>
        <source>while the graphics card is hotter than</source>
        <translation>когда температура видеокарты выше</translation>
    </message>
    <message>
        <source> °C</source>
        <translation> °C</translation>
    </message>
    <message>
        <source>Contribute only at these times</source>
        <translation>Участвовать только в это время</translation>
    </message>
    <message>
        <source>Any time. For example: Mon-Fri 18:00-08:00, Sat-Sun</source>
        <translation>В любое время. Например: Mon-Fri 18:00-08:00, Sat-Sun</translation>
    </message>
    <message>
        <source>This computer cannot tell when a program fills the screen: that needs an X11 desktop session.</source>
        <translation>Этот компьютер не может определить, когда программа занимает весь экран: для этого нужен сеанс рабочего стола X11.</translation>
    </message>
    <message>
        <source>This computer cannot tell when you are using it: that needs an X11 desktop session that reports idle time.</source>
        <translation>Этот компьютер не может определить, когда вы им пользуетесь: для этого нужен сеанс рабочего стола X11, сообщающий время бездействия.</translation>
    </message>
    <message>
        <source>This computer cannot tell: no NVIDIA graphics card with its driver was found.</source>
        <translation>Этот компьютер не может это определить: видеокарта NVIDIA с драйвером не найдена.</translation>
    </message>
    <message>
        <source>This computer cannot tell: it has no battery, or its power service (UPower) is not running.</source>
        <translation>Этот компьютер не может это определить: у него нет батареи или не запущена служба питания (UPower).</translation>
    </message>
    <message>
        <source>This computer cannot tell, so this rule will not pause Tessera.</source>
        <translation>Этот компьютер не может это определить, поэтому это правило не приостановит Tessera.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::SettingsDialog</name>
    <message>
        <source>Tessera Settings</source>
        <translation>Настройки Tessera</translation>
    </message>
    <message>
        <source>&amp;General</source>
        <translation>&amp;Общие</translation>
    </message>
    <message>
        <source>When to &amp;pause</source>
        <translation>Когда &amp;приостанавливать</translation>
    </message>
    <message>
        <source>&amp;Coordinator</source>
        <translation>&amp;Координатор</translation>
    </message>
</context>
<context>
    <name>tessera::ui::SwarmPanel</name>
    <message>
        <source>The swarm</source>
        <translation>Рой</translation>
    </message>
    <message>
        <source>Waiting for the coordinator&apos;s answer…</source>
        <translation>Ожидание ответа координатора…</translation>
    </message>
    <message>
        <source>Training loss (lower is better)</source>
        <translation>Потери при обучении (чем меньше, тем лучше)</translation>
    </message>
    <message>
        <source>step</source>
        <translation>шаг</translation>
    </message>
    <message>
        <source>1 volunteer online</source>
        <translation>1 доброволец в сети</translation>
    </message>
    <message>
        <source>%1 volunteers online</source>
        <translation>Добровольцев в сети: %1</translation>
    </message>
    <message>
        <source>step %1</source>
        <translation>шаг %1</translation>
    </message>
    <message>
        <source>loss %1</source>
        <translation>потери %1</translation>
    </message>
    <message>
        <source>%1 tokens/s</source>
        <translation>токенов/с: %1</translation>
    </message>
    <message>
        <source>The coordinator is not answering; Tessera keeps asking.</source>
        <translation>Координатор не отвечает; Tessera продолжает попытки.</translation>
    </message>
    <message>
        <source>The coordinator is not answering; the figures above are the last it gave.</source>
        <translation>Координатор не отвечает; выше показаны последние полученные от него данные.</translation>
    </message>
</context>
<context>
    <name>tessera::ui::TrayController</name>
    <message>
        <source>Dashboard</source>
        <translation>Панель</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>Настройки…</translation>
    </message>
    <message>
        <source>About Tessera…</source>
        <translation>О программе Tessera…</translation>
    </message>
    <message>
        <source>Quit Tessera</source>
        <translation>Выйти из Tessera</translation>
    </message>
    <message>
        <source>Tessera — %1
Today: %2 credits (%3 pending)</source>
        <translation>Tessera — %1
Кредитов сегодня: %2 (в ожидании: %3)</translation>
    </message>
</context>
<context>
    <name>tessera::ui::WelcomePage</name>
    <message>
        <source>Help train an open language model</source>
        <translation>Помогите обучить открытую языковую модель</translation>
    </message>
    <message>
        <source>Tessera lends your graphics card&apos;s spare time to volunteers who train a large language model together: your computer holds one small part of the model and earns credits for the work it does.</source>
        <translation>Tessera предоставляет свободное время вашей видеокарты добровольцам, которые вместе обучают большую языковую модель: ваш компьютер хранит одну небольшую часть модели и получает кредиты за выполненную работу.</translation>
    </message>
    <message>
        <source>It pauses by itself the moment you start a game or the computer needs its graphics card, and it never needs your attention.</source>
        <translation>Она сама приостанавливается, как только вы запускаете игру или видеокарта понадобится компьютеру, и никогда не требует вашего внимания.</translation>
    </message>
    <message>
        <source>Coordinator address</source>
        <translation>Адрес координатора</translation>
    </message>
    <message>
        <source>Coordinator &amp;address:</source>
        <translation>&amp;Адрес координатора:</translation>
    </message>
    <message>
        <source>Certificate fingerprint (SHA-256)</source>
        <translation>Отпечаток сертификата (SHA-256)</translation>
    </message>
    <message>
        <source>&amp;Trust this coordinator</source>
        <translation>&amp;Доверять этому координатору</translation>
    </message>
    <message>
        <source>&amp;Contribute</source>
        <translation>&amp;Участвовать</translation>
    </message>
    <message>
        <source>&amp;Not now</source>
        <translation>&amp;Не сейчас</translation>
    </message>
    <message>
        <source>Checking the coordinator at %1…</source>
        <translation>Проверка координатора по адресу %1…</translation>
    </message>
    <message>
        <source>SHA-256 fingerprint:</source>
        <translation>Отпечаток SHA-256:</translation>
    </message>
    <message>
        <source>Tessera could not keep the coordinator&apos;s certificate.</source>
        <translation>Tessera не удалось сохранить сертификат координатора.</translation>
    </message>
</context>
</TS>
